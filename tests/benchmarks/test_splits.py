"""benchmarks/splits.py: the test split shares no seed and no held-out question with dev."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.provenance import sha256
from benchmarks.splits import (
    DEV_SEEDS_USED,
    EVOLVE,
    FORMER_TEST_FILES,
    LEARNING_CURVE,
    SUITE_TEST_FILES,
    evolve_split,
)
from crsp_ops.crsp.tasks.edge import edge_math_tasks
from crsp_ops.data.financebench import split_pool_heldout
from crsp_ops.data.financebench_synthetic import generate_financebench_examples

HELDOUT = 400  # the claims' held-out size (lab/claims/evolve_*_test.md)


def evolve_heldout(split):
    """The split's held-out questions, as the financebench stage builds them (2000 rows)."""
    rows = generate_financebench_examples(count=2000, seed=split.financebench_seed)
    return split_pool_heldout(rows, heldout_size=HELDOUT, seed=split.financebench_seed)


def key(row):
    return row.question, tuple(e.evidence_text for e in row.evidence)


def test_evolve_test_seeds_and_data_are_disjoint_from_dev():
    dev, test = EVOLVE["dev"], EVOLVE["test"]
    assert not set(test.search_seeds) & (set(dev.search_seeds) | DEV_SEEDS_USED)
    assert test.financebench_seed != dev.financebench_seed
    assert test.financebench_seed not in DEV_SEEDS_USED
    dev_pool, dev_held = evolve_heldout(dev)
    test_pool, test_held = evolve_heldout(test)
    assert len(test_held) == HELDOUT
    dev_rows = {key(r) for r in dev_pool + dev_held}
    assert not {key(r) for r in test_held} & dev_rows  # no test question was seen on dev


def test_learning_curve_test_schedule_is_new_and_its_heldout_mostly_unseen():
    dev, test = LEARNING_CURVE["dev"], LEARNING_CURVE["test"]
    assert test.schedule_seed not in DEV_SEEDS_USED | {dev.schedule_seed}
    assert not set(test.sampling_seeds) & (set(dev.sampling_seeds) | DEV_SEEDS_USED)
    assert len(test.sampling_seeds) >= 4  # the claim's runs per arm

    def heldout(seed):
        crsp = SimpleNamespace(seed=seed, edge_difficulty=1, edge_tasks=2000, heldout_math=200)
        return {t.question for t in edge_math_tasks(crsp)[1]}

    shared = heldout(test.schedule_seed) & heldout(dev.schedule_seed)
    # difficulty-1 problems repeat across draws: declared in claims/crsp_vs_grpo_test.md
    assert len(shared) <= 10, sorted(shared)


def test_unknown_split_is_refused():
    assert evolve_split("test") is EVOLVE["test"]
    with pytest.raises(ValueError, match="dev"):
        evolve_split("holdout")


def test_suite_test_files_are_the_recorded_ones_and_share_no_row_with_the_rest():
    root = Path(__file__).resolve().parents[2]
    for path, digest in {**SUITE_TEST_FILES, **FORMER_TEST_FILES}.items():
        assert sha256(root / path) == digest, f"{path} is not the recorded file"
    for path in SUITE_TEST_FILES:
        folder = (root / path).parent
        prompts = {line for line in (root / path).read_text().splitlines()}
        for other in ("train.jsonl", "dev.jsonl", "dev_former_test.jsonl"):
            assert not prompts & set((folder / other).read_text().splitlines()), other
