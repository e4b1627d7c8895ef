"""Clusters-stage throughput: vocabulary tokens embedded per second and total stage time.

Runs the real stage (decode, rule clusters, MiniLM embedding, PCA, k-means, descriptions, save)
on a real tokenizer and prints one JSON line. ``--target-vocab`` grows the vocabulary with
surface variants of the tokenizer's own tokens (" x", "X", "x." ...) to reach a realistic size
(e.g. 150000 for Qwen-like models) when no such tokenizer is available offline.

    python -m benchmarks.clusters_throughput                       # CPU, MiniLM's 30k vocabulary
    python -m benchmarks.clusters_throughput --device cuda --target-vocab 150000 --batch-size 4096
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")


class VariantVocabulary:
    """A tokenizer stand-in whose vocabulary is a real one grown with surface variants."""

    _VARIANTS = (
        lambda t: t, lambda t: " " + t, lambda t: t.capitalize(), lambda t: " " + t.capitalize(),
        lambda t: t.upper(), lambda t: t + ".", lambda t: "(" + t, lambda t: t + "s",
    )

    def __init__(self, tokenizer, size: int):
        base = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
        texts = [variant(text) for variant in self._VARIANTS for text in base]
        if size > len(texts):
            raise ValueError(f"--target-vocab at most {len(texts)} for this tokenizer")
        self.texts = texts[:size]
        self.eos_token_id = tokenizer.eos_token_id
        self.chat_template = getattr(tokenizer, "chat_template", None)
        self.added_tokens_decoder = tokenizer.added_tokens_decoder

    def __len__(self) -> int:
        return len(self.texts)

    def batch_decode(self, ids, **_kwargs):
        return [self.texts[row[0]] for row in ids]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", default=None, help="tokenizer dir (default: MiniLM's)")
    parser.add_argument("--embedder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--device", default="cpu", choices=["auto", "cpu", "cuda"])
    parser.add_argument("--target-vocab", type=int, default=None)
    parser.add_argument("--n-clusters", type=int, default=10, help="k-means clusters")
    parser.add_argument("--pca-dim", type=int, default=32)
    parser.add_argument("--batch-size", type=int, default=1024)
    parser.add_argument("--minibatch-threshold", type=int, default=20000)
    return parser.parse_args()


def measure(args: argparse.Namespace) -> dict:
    """Load the embedder, run the clusters stage on the vocabulary, time both; the JSON line."""
    from transformers import AutoTokenizer

    from crsp_ops.steering.cluster_io import save_token_clusters
    from crsp_ops.steering.clusters import build_token_clusters
    from crsp_ops.steering.embedder import (
        load_sentence_embedder,
        packaged_minilm_path,
        resolve_device,
    )

    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer or str(packaged_minilm_path()))
    if args.target_vocab:
        tokenizer = VariantVocabulary(tokenizer, args.target_vocab)
    device = resolve_device(args.device)
    started = time.perf_counter()
    embed = load_sentence_embedder(args.embedder, device=device, batch_size=args.batch_size)
    load_s = time.perf_counter() - started
    embedded = {"tokens": 0, "seconds": 0.0}

    def timed_embed(texts):
        tick = time.perf_counter()
        vectors = embed(texts)
        embedded["seconds"] += time.perf_counter() - tick
        embedded["tokens"] += len(texts)
        return vectors

    timed_embed(["warm up"] * 8)  # first call pays kernel setup; not vocabulary throughput
    embedded.update(tokens=0, seconds=0.0)
    stage_started = time.perf_counter()
    clusters = build_token_clusters(
        tokenizer, embed=timed_embed, generation_eos_ids=None, n_kmeans_clusters=args.n_clusters,
        pca_dim=args.pca_dim, seed=0, batch_size=args.batch_size,
        minibatch_threshold=args.minibatch_threshold, n_representatives=10, progress=False,
    )
    with tempfile.TemporaryDirectory() as out:
        save_token_clusters(out, clusters)
    stage_s = time.perf_counter() - stage_started
    return result(args, device, clusters, embedded, load_s=load_s, stage_s=stage_s)


def result(args: argparse.Namespace, device: str, clusters, embedded: dict, *, load_s: float,
           stage_s: float) -> dict:
    """The JSON line: embedding throughput, the stage's and the embedder load's seconds."""
    return {
        "benchmark": "clusters_throughput",
        "device": device,
        "vocab_size": clusters.vocab_size,
        "embedded_tokens": embedded["tokens"],
        "embed_tokens_per_s": round(embedded["tokens"] / embedded["seconds"], 1),
        "embed_s": round(embedded["seconds"], 3),
        "stage_s": round(stage_s, 3),
        "total_s": round(stage_s + load_s, 3),
        "embedder_load_s": round(load_s, 3),
        "n_clusters": clusters.n_clusters,
        "pca_dim": args.pca_dim,
        "batch_size": args.batch_size,
        "kmeans": type(clusters.kmeans).__name__,
    }


def main() -> None:
    print(json.dumps(measure(parse_args())))


if __name__ == "__main__":
    main()
