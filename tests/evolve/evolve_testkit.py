"""Helpers of the evolution tests: a hashing embedder, a project builder, a fake backend."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.fakes import hashing_embed  # noqa: F401 - re-exported to this package's tests

REPO = Path(__file__).resolve().parents[2]
N_KMEANS = 6


@dataclass(frozen=True)
class EvolveInputs:
    """Paths of the staged inputs."""

    model_dir: Path
    clusters_dir: Path
    deltas_file: Path
    pool_dir: Path
    n_clusters: int


def make_project(root: Path, inputs: EvolveInputs) -> Path:
    """A temporary project root (Kconfig tree, params.yaml) with the inputs at default paths."""
    from crsp_ops.config import sync_params
    from crsp_ops.paths import copy_config_tree

    root.mkdir(parents=True, exist_ok=True)
    copy_config_tree(REPO, root)
    sync_params(root)
    shutil.copytree(inputs.model_dir, root / "models" / "base")
    shutil.copytree(inputs.clusters_dir, root / "outputs" / "clusters")
    (root / "outputs" / "deltas").mkdir(parents=True)
    shutil.copy(inputs.deltas_file, root / "outputs" / "deltas" / "deltas_initial.json")
    shutil.copytree(inputs.pool_dir, root / "data" / "financebench")
    return root


# --- A fake twin of the minibatch evaluation: answers get shorter as cluster 2's delta drops.


@dataclass(frozen=True)
class FakeRecord:
    """Shaped like ``evaluation.minibatch.ExampleRecord``."""

    example_id: str
    question: str
    ground_truth: str
    answer: str
    response_tokens: int
    is_correct: bool
    reasoning: str
    token_ids: tuple[int, ...] = ()


@dataclass(frozen=True)
class FakeScores:
    """Shaped like ``MinibatchScores``."""

    mean_token_length: float
    correctness_ratio: float
    shortness_score: float
    composite_score: float


@dataclass(frozen=True)
class FakeResult:
    """Shaped like ``MinibatchResult``."""

    records: tuple
    scores: FakeScores


def fake_evaluate(examples, deltas, *, filler_cluster: str = "2", scale: float = 20.0):
    """Each answer = 3 answer tokens (cluster 1) + filler tokens (``filler_cluster``).

    The filler count falls as that cluster's delta falls and varies with the example; every
    answer is correct. Token ids
    equal cluster ids, so a ``ClusterCounter`` over ``np.arange(K)`` reads them back.
    """
    base = 10 + 5 * deltas[filler_cluster]
    records = []
    for example in examples:
        filler = max(0, round(base + 3 * (int(example) % 3)))  # lengths vary within a batch
        ids = (1, 1, 1) + (int(filler_cluster),) * filler
        records.append(FakeRecord(
            example_id=str(example), question=f"q{example}", ground_truth="1",
            answer="The answer is 1." + " indeed" * filler, response_tokens=len(ids),
            is_correct=True, reasoning="matches", token_ids=ids,
        ))
    mean = float(np.mean([r.response_tokens for r in records]))
    short = 1.0 / (1.0 + mean / scale)
    return FakeResult(tuple(records), FakeScores(mean, 1.0, short, 0.4 * short + 0.6))


def fake_evaluate_truncating(examples, deltas, *, scale: float = 20.0):
    """A twin where correctness depends on the deltas: EOS (cluster 0) can cut answers short.

    Each answer = 4 working tokens (cluster 3) + 3 answer tokens (cluster 1) + filler
    (cluster 2, fewer as its delta falls). A positive EOS delta ends answers sooner: it drops
    ``4 * delta`` filler tokens, and beyond a per-example limit (1.0, 1.5 or 2.0) the answer is
    cut off and wrong. Shorter is better only while answers stay correct.
    """
    eos = deltas["0"]
    records = []
    for example in examples:
        variant = int(example) % 3
        filler = max(0, round(10 + 5 * deltas["2"] + 3 * variant - 4 * max(eos, 0.0)))
        correct = eos <= 1.0 + 0.5 * variant
        ids = (3,) * 4 + ((1, 1, 1) if correct else ()) + (2,) * filler
        records.append(FakeRecord(
            example_id=str(example), question=f"q{example}", ground_truth="1",
            answer="work" + (" The answer is 1." if correct else "") + " indeed" * filler,
            response_tokens=len(ids), is_correct=correct,
            reasoning="matches" if correct else "cut off", token_ids=ids,
        ))
    mean = float(np.mean([r.response_tokens for r in records]))
    accuracy = float(np.mean([r.is_correct for r in records]))
    short = 1.0 / (1.0 + mean / scale)
    return FakeResult(tuple(records), FakeScores(mean, accuracy, short,
                                                 0.4 * short + 0.6 * accuracy))
