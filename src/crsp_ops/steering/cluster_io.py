"""Save and load the clusters stage outputs (every file written atomically).

Directory layout:
    token_clusters.npy         (V,) int64 table: the only file inference servers need
    clusters_meta.json         n_clusters, vocab size, cluster 0/1 ids
    token_texts.json           decoded text of every vocab id
    cluster_model.joblib       {"pca": PCA, "kmeans": KMeans | MiniBatchKMeans}
    cluster_descriptions.json  per cluster id: description, size, representative tokens
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import joblib
import numpy as np

from crsp_ops.atomic_io import atomic_path, atomic_write_bytes, atomic_write_json
from crsp_ops.steering.clusters import TokenClusters
from crsp_ops.steering.table import META_FILE, TABLE_FILE, load_table

TEXTS_FILE = "token_texts.json"
MODEL_FILE = "cluster_model.joblib"
DESCRIPTIONS_FILE = "cluster_descriptions.json"


def save_token_clusters(directory: str | os.PathLike, clusters: TokenClusters) -> Path:
    """Write every stage output of ``clusters`` under ``directory`` and return it."""
    out = Path(directory)
    buffer = io.BytesIO()
    np.save(buffer, np.asarray(clusters.token_clusters, dtype=np.int64), allow_pickle=False)
    atomic_write_bytes(out / TABLE_FILE, buffer.getvalue())
    atomic_write_json(
        out / META_FILE,
        {
            "n_clusters": clusters.n_clusters,
            "vocab_size": clusters.vocab_size,
            "eos_ids": sorted(clusters.eos_ids),
            "numeric_ids": sorted(clusters.numeric_ids),
        },
    )
    atomic_write_json(out / TEXTS_FILE, list(clusters.texts), indent=None)
    with atomic_path(out / MODEL_FILE) as tmp:
        joblib.dump({"pca": clusters.pca, "kmeans": clusters.kmeans}, tmp)
    atomic_write_json(out / DESCRIPTIONS_FILE, clusters.descriptions)
    return out


def load_token_clusters(directory: str | os.PathLike) -> TokenClusters:
    """Load what ``save_token_clusters`` wrote; raise ``ValueError`` on inconsistent files."""
    src = Path(directory)
    table = load_table(src / TABLE_FILE)
    meta = json.loads((src / META_FILE).read_text(encoding="utf-8"))
    texts = json.loads((src / TEXTS_FILE).read_text(encoding="utf-8"))
    model = joblib.load(src / MODEL_FILE)
    descriptions = json.loads((src / DESCRIPTIONS_FILE).read_text(encoding="utf-8"))
    if not (meta["vocab_size"] == len(table) == len(texts)):
        raise ValueError(f"{src}: table, texts and meta disagree on the vocabulary size")
    if set(descriptions) != {str(i) for i in range(meta["n_clusters"])}:
        raise ValueError(f"{src}: descriptions do not cover cluster ids 0..{meta['n_clusters']-1}")
    return TokenClusters(
        token_clusters=table, n_clusters=int(meta["n_clusters"]), texts=tuple(texts),
        eos_ids=frozenset(meta["eos_ids"]), numeric_ids=frozenset(meta["numeric_ids"]),
        pca=model["pca"], kmeans=model["kmeans"], descriptions=descriptions,
    )
