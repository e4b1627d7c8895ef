"""Assign every vocabulary id of a tokenizer to a steering cluster.

Cluster 0 = EOS/EOT, 1 = digits/arithmetic/currency, the rest k-means over embedded token text
(``label + 2``); built once per tokenizer, so steering is only a gather through the table.

Design: docs/design/steering.md#clusters.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from sklearn.cluster import KMeans, MiniBatchKMeans
from sklearn.decomposition import PCA

from crsp_ops.steering.cluster_descriptions import describe_cluster
from crsp_ops.steering.embedder import Embedder
from crsp_ops.steering.token_rules import (
    EOS_CLUSTER,
    FIRST_KMEANS_CLUSTER,
    NUMERIC_CLUSTER,
    eos_token_ids,
    numeric_symbol_ids,
    subword_prefix,
)
from crsp_ops.tracking.progress import progress_bar

_DECODE_CHUNK = 8192  # ids per batch_decode call; only sets the progress-bar granularity
_MINIBATCH_KMEANS_BATCH = 4096  # sklearn advises >= 256 * cores; larger is steadier


@dataclass(frozen=True, eq=False)
class TokenClusters:
    """The output of the clusters stage: a token→cluster table and what produced it."""

    token_clusters: np.ndarray  # (V,) int64, cluster id of each vocab id (read-only)
    n_clusters: int  # total cluster ids = k-means clusters + 2
    texts: tuple[str, ...]  # decoded text of each vocab id
    eos_ids: frozenset[int]  # cluster 0 members
    numeric_ids: frozenset[int]  # cluster 1 members
    pca: PCA  # fitted on the embeddings of the k-means tokens
    kmeans: KMeans | MiniBatchKMeans  # fitted on the PCA-reduced embeddings
    descriptions: dict[str, dict]  # cluster_descriptions.json content

    @property
    def vocab_size(self) -> int:
        """Number of vocab ids covered by the table."""
        return int(self.token_clusters.shape[0])


def decode_vocabulary(tokenizer: Any, *, progress: bool) -> list[str]:
    """Decode each vocab id on its own (special tokens kept as their text).

    Args:
        tokenizer: a Hugging Face tokenizer; ``len(tokenizer)`` ids (added tokens included).
        progress: show a tqdm bar over the vocabulary.
    """
    vocab_size = len(tokenizer)
    texts: list[str] = []
    with progress_bar(total=vocab_size, desc="decode vocabulary", unit="tok",
                      enabled=progress) as bar:
        for start in range(0, vocab_size, _DECODE_CHUNK):
            ids = [[i] for i in range(start, min(start + _DECODE_CHUNK, vocab_size))]
            texts.extend(
                tokenizer.batch_decode(
                    ids, skip_special_tokens=False, clean_up_tokenization_spaces=False
                )
            )
            bar.update(len(ids))
    return texts


def embed_texts(
    texts: Sequence[str], embed: Embedder, *, batch_size: int, progress: bool
) -> np.ndarray:
    """Embed texts in length-sorted batches and return float32 rows in input order ``(N, D)``."""
    if not texts:
        raise ValueError("no texts to embed")
    order = np.argsort([len(text) for text in texts], kind="stable")
    chunks = []
    with progress_bar(total=len(texts), desc="embed tokens", unit="tok",
                      enabled=progress) as bar:
        for start in range(0, len(texts), batch_size):
            batch = [texts[i] for i in order[start : start + batch_size]]
            vectors = np.asarray(embed(batch), dtype=np.float32)
            if vectors.shape[0] != len(batch):
                raise ValueError(f"embedder returned {vectors.shape[0]} rows for {len(batch)}")
            chunks.append(vectors)
            bar.update(len(batch))
    embeddings = np.empty((len(texts), chunks[0].shape[1]), dtype=np.float32)
    embeddings[order] = np.concatenate(chunks)
    return embeddings


def fit_kmeans(
    embeddings: np.ndarray, *, n_kmeans_clusters: int, pca_dim: int, seed: int,
    minibatch_threshold: int,
) -> tuple[PCA, KMeans | MiniBatchKMeans, np.ndarray, np.ndarray]:
    """Reduce ``embeddings (N, D)`` with PCA and cluster them.

    Returns:
        ``(pca, kmeans, labels (N,), reduced (N, pca_dim))``; labels come from
        ``kmeans.predict`` so the saved state reproduces them exactly.
    """
    n_tokens, dim = embeddings.shape
    if not 1 <= pca_dim <= min(n_tokens, dim):
        raise ValueError(
            f"pca_dim={pca_dim} must be in [1, min(tokens={n_tokens}, embedding dim={dim})]"
        )
    if not 1 <= n_kmeans_clusters <= n_tokens:
        raise ValueError(f"n_kmeans_clusters={n_kmeans_clusters} must be in [1, {n_tokens}]")
    pca = PCA(n_components=pca_dim, random_state=seed)
    reduced = pca.fit_transform(embeddings).astype(np.float32)  # (N, pca_dim)
    if n_tokens > minibatch_threshold:
        kmeans = MiniBatchKMeans(
            n_clusters=n_kmeans_clusters, random_state=seed, n_init="auto",
            batch_size=_MINIBATCH_KMEANS_BATCH,
        )
    else:
        kmeans = KMeans(n_clusters=n_kmeans_clusters, random_state=seed, n_init="auto")
    kmeans.fit(reduced)
    return pca, kmeans, kmeans.predict(reduced), reduced


def nearest_to_centroid(
    reduced: np.ndarray, labels: np.ndarray, centers: np.ndarray, *, top: int
) -> list[np.ndarray]:
    """For each center, the row indices of its members nearest to it (at most ``top``)."""
    out = []
    for label, center in enumerate(centers):
        members = np.flatnonzero(labels == label)
        distances = np.linalg.norm(reduced[members] - center, axis=1)
        out.append(members[np.argsort(distances, kind="stable")[:top]])
    return out


def build_token_clusters(
    tokenizer: Any,
    *,
    embed: Embedder,
    generation_eos_ids: Iterable[int] | int | None,
    n_kmeans_clusters: int,
    pca_dim: int,
    seed: int,
    batch_size: int,
    minibatch_threshold: int,
    n_representatives: int,
    progress: bool,
) -> TokenClusters:
    """Build the token→cluster table of a tokenizer.

    Args:
        tokenizer: a Hugging Face tokenizer; the table covers ``len(tokenizer)`` ids.
        embed: texts → ``(N, D)`` embeddings (see ``embedder.load_sentence_embedder``).
        generation_eos_ids: the model's ``generation_config.eos_token_id`` (or ``None``).
        n_kmeans_clusters: k-means clusters K; the table's ids are ``0 .. K+1``.
        pca_dim: PCA components kept before k-means.
        seed: random state of PCA and k-means.
        batch_size: texts per ``embed`` call.
        minibatch_threshold: use MiniBatchKMeans when more tokens than this are clustered.
        n_representatives: representative tokens listed per cluster in the descriptions.
        progress: show tqdm bars over the vocabulary.

    Returns:
        The table, the fitted PCA and k-means, and the cluster descriptions.
    """
    texts = decode_vocabulary(tokenizer, progress=progress)
    eos_ids = eos_token_ids(tokenizer, generation_eos_ids)
    numeric_ids = numeric_symbol_ids(texts, subword_prefix(tokenizer), excluded=eos_ids)
    table = np.full(len(texts), -1, dtype=np.int64)  # (V,)
    table[sorted(eos_ids)] = EOS_CLUSTER
    table[sorted(numeric_ids)] = NUMERIC_CLUSTER
    rest = np.flatnonzero(table < 0)  # ids left for k-means
    embeddings = embed_texts(
        [texts[i] for i in rest], embed, batch_size=batch_size, progress=progress
    )
    pca, kmeans, labels, reduced = fit_kmeans(
        embeddings, n_kmeans_clusters=n_kmeans_clusters, pca_dim=pca_dim, seed=seed,
        minibatch_threshold=minibatch_threshold,
    )
    table[rest] = labels + FIRST_KMEANS_CLUSTER
    table.setflags(write=False)
    nearest = nearest_to_centroid(reduced, labels, kmeans.cluster_centers_, top=n_representatives)
    representatives = _representatives(eos_ids, numeric_ids, rest, nearest, top=n_representatives)
    n_clusters = n_kmeans_clusters + FIRST_KMEANS_CLUSTER
    descriptions = _describe_clusters(texts, table, representatives, n_clusters)
    return TokenClusters(
        token_clusters=table, n_clusters=n_clusters, texts=tuple(texts), eos_ids=eos_ids,
        numeric_ids=numeric_ids, pca=pca, kmeans=kmeans, descriptions=descriptions,
    )


def _representatives(
    eos_ids: frozenset[int], numeric_ids: frozenset[int], rest: np.ndarray,
    nearest: Sequence[np.ndarray], *, top: int,
) -> dict[int, list[int]]:
    """Vocab ids listed per cluster: the lowest rule ids, then k-means members nearest centroid."""
    return {
        EOS_CLUSTER: sorted(eos_ids)[:top],
        NUMERIC_CLUSTER: sorted(numeric_ids)[:top],
        **{label + FIRST_KMEANS_CLUSTER: rest[rows].tolist() for label, rows in enumerate(nearest)},
    }


def _describe_clusters(
    texts: Sequence[str], table: np.ndarray, representatives: dict[int, list[int]],
    n_clusters: int,
) -> dict[str, dict]:
    """``cluster_descriptions.json`` content: each cluster described from its members' texts."""
    return {
        str(cid): describe_cluster(
            cid,
            [texts[i] for i in np.flatnonzero(table == cid)],
            [texts[i] for i in representatives[cid]],
        )
        for cid in range(n_clusters)
    }
