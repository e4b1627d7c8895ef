"""Evolution test fixtures: real inputs (tiny model, clusters, deltas, pool).

``evolve_inputs`` stages the clusters stage output for the tiny tokenizer (a hashing embedder
stands in for sentence-transformers so nothing downloads), zero initial deltas and a
FinanceBench pool + held-out split.
"""

from __future__ import annotations

import pytest
from evolve_testkit import N_KMEANS, EvolveInputs, hashing_embed


@pytest.fixture(scope="session")
def evolve_inputs(tiny_model_dir, tmp_path_factory) -> EvolveInputs:
    """Clusters of the tiny tokenizer, zero deltas, and a 40 + 8 question pool/held-out split."""
    from transformers import AutoTokenizer, GenerationConfig

    from crsp_ops.atomic_io import atomic_write_jsonl
    from crsp_ops.data.financebench import load_financebench, split_pool_heldout
    from crsp_ops.evolve.inputs import HELDOUT_FILE, POOL_FILE
    from crsp_ops.steering.cluster_io import save_token_clusters
    from crsp_ops.steering.clusters import build_token_clusters
    from crsp_ops.steering.deltas import cluster_ids, save_deltas

    root = tmp_path_factory.mktemp("evolve_inputs")
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    clusters = build_token_clusters(
        tokenizer, embed=hashing_embed,
        generation_eos_ids=GenerationConfig.from_pretrained(tiny_model_dir).eos_token_id,
        n_kmeans_clusters=N_KMEANS, pca_dim=8, seed=0, batch_size=256,
        minibatch_threshold=100_000, n_representatives=5, progress=False,
    )
    clusters_dir = save_token_clusters(root / "clusters", clusters)
    deltas_file = save_deltas(
        root / "deltas" / "deltas_initial.json",
        {cid: 0.0 for cid in cluster_ids(clusters.n_clusters)},
    )
    rows = load_financebench("synthetic", synthetic_count=48, seed=7).rows
    pool, heldout = split_pool_heldout(rows, heldout_size=8, seed=0)
    atomic_write_jsonl(root / "pool" / POOL_FILE, [row.to_row() for row in pool])
    atomic_write_jsonl(root / "pool" / HELDOUT_FILE, [row.to_row() for row in heldout])
    return EvolveInputs(tiny_model_dir, clusters_dir, deltas_file, root / "pool",
                        clusters.n_clusters)
