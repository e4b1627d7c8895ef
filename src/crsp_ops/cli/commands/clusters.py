"""Stage ``clusters``: assign every vocabulary token of the model's tokenizer to a cluster.

Cluster 0 = the EOS/EOT ids, 1 = digit/arithmetic/currency tokens, 2 .. K+1 = k-means over the
sentence embeddings (PCA-reduced) of every other decoded token. Runs once per tokenizer; the
evolution loop then only changes per-cluster deltas.

Outputs under ``--out`` (see ``crsp_ops.steering.cluster_io``): ``token_clusters.npy``,
``clusters_meta.json``, ``token_texts.json``, ``cluster_model.joblib`` (PCA + k-means) and
``cluster_descriptions.json``, plus ``<out>.mlflow_run.json`` beside it (the run id). A short
MLflow run (experiment ``<prefix>-clusters``) records the settings, the cluster sizes, the
wall time and the descriptions.

Examples:
    crsp-ops clusters --model models/base --out outputs/clusters
    crsp-ops clusters --model models/base --out /tmp/c --set clusters.n_kmeans_clusters=4

Reads: the ``clusters`` section (embedder, n_kmeans_clusters, pca_dim, seed, device, batch_size,
minibatch_threshold, n_representatives) and ``tracking``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import record_run, settings_from
from crsp_ops.paths import BASE_MODEL_DIR, CLUSTERS_DIR
from crsp_ops.tracking.run_tags import run_name

HELP = "cluster the model's vocabulary (EOS, numeric, k-means over token embeddings)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``clusters`` arguments."""
    parser.add_argument(
        "--model", default=str(BASE_MODEL_DIR), help="base model directory (its tokenizer)"
    )
    parser.add_argument("--out", default=str(CLUSTERS_DIR), help="output directory")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bars")


def cluster_vocabulary(model_dir: str | os.PathLike, clusters, *, progress: bool):
    """Load the model's tokenizer and the embedder, and build its ``TokenClusters``.

    Args:
        model_dir: a saved HF model directory (tokenizer and generation config are read).
        clusters: ``settings.clusters``.
        progress: show progress bars over the vocabulary.

    Raises:
        crsp_ops.steering.embedder.EmbeddingDeviceError: CUDA asked for and missing or out of
            memory (never a silent fallback).
    """
    from transformers import GenerationConfig

    from crsp_ops.models.model_ref import load_tokenizer, resolve_model_dir
    from crsp_ops.steering.clusters import build_token_clusters
    from crsp_ops.steering.embedder import load_sentence_embedder

    tokenizer = load_tokenizer(model_dir)  # where model_ref.json points
    model_dir = resolve_model_dir(model_dir)
    generation_eos = None
    if (Path(model_dir) / "generation_config.json").is_file():
        generation_eos = GenerationConfig.from_pretrained(model_dir).eos_token_id
    embed = load_sentence_embedder(
        clusters.embedder, device=clusters.device, batch_size=clusters.batch_size
    )
    return build_token_clusters(
        tokenizer,
        embed=embed,
        generation_eos_ids=generation_eos,
        n_kmeans_clusters=clusters.n_kmeans_clusters,
        pca_dim=clusters.pca_dim,
        seed=clusters.seed,
        batch_size=clusters.batch_size,
        minibatch_threshold=clusters.minibatch_threshold,
        n_representatives=clusters.n_representatives,
        progress=progress,
    )


def run(args: argparse.Namespace) -> int:
    """Build, save and log the token clusters."""
    from crsp_ops.steering.cluster_io import DESCRIPTIONS_FILE, save_token_clusters
    from crsp_ops.steering.embedder import EmbeddingDeviceError
    from crsp_ops.steering.table import META_FILE
    from crsp_ops.tracking import start_run

    resolved = settings_from(args)
    name = run_name("clusters", resolved.settings.model.source,
                    f"k{resolved.settings.clusters.n_kmeans_clusters}")
    with start_run("clusters", resolved, run_name=name,
                   tags={"crsp.model_dir": str(args.model)}) as tracker:
        started = time.perf_counter()
        try:
            clusters = cluster_vocabulary(
                args.model, resolved.settings.clusters, progress=not args.no_progress
            )
        except EmbeddingDeviceError as error:
            print(f"crsp-ops clusters: {error}", file=sys.stderr)
            return 1
        seconds = time.perf_counter() - started
        out = save_token_clusters(args.out, clusters)
        sizes = {cid: entry["size"] for cid, entry in clusters.descriptions.items()}
        tracker.log_metrics(
            {
                "vocab_size": clusters.vocab_size,
                "n_clusters": clusters.n_clusters,
                "stage_seconds": seconds,
                "tokens_per_second": clusters.vocab_size / seconds,
                **{f"cluster_size_{cid}": size for cid, size in sizes.items()},
            },
            step=0,
        )
        tracker.log_artifact(out / DESCRIPTIONS_FILE, "clusters")
        tracker.log_artifact(out / META_FILE, "clusters")
        record_run(out, tracker)  # a DVC-restored copy still finds its run
    print(
        f"clusters: {clusters.vocab_size} tokens -> {clusters.n_clusters} clusters "
        f"(EOS {len(clusters.eos_ids)}, numeric {len(clusters.numeric_ids)}) in {seconds:.1f}s; "
        f"wrote {out}"
    )
    return 0


main = stage_main(sys.modules[__name__])
