"""The dev and test splits of the benchmarks that support claims, defined in one place.

``dev`` holds the seeds and data every setting so far was chosen on (the 400 held-out
FinanceBench questions of generator seed 0, sha256 01b4d1f4…; search seeds 0-2; the seed-2 task
schedule of the learning curves). ``test`` holds seeds that were never used for a choice: another
synthetic FinanceBench draw (so other held-out questions), other search seeds, another task
schedule and held-out task set, other sampling seeds. Choose settings on ``dev``; make a claim once,
on ``test``, by the run declared in ``lab/claims/<name>.md`` before it ran.
``tests/benchmarks/test_splits.py`` checks that the two are disjoint.
"""

from __future__ import annotations

from dataclasses import dataclass

SPLITS = ("dev", "test")


@dataclass(frozen=True)
class EvolveSplit:
    """Data and search seeds of an evolve benchmark (``evolve_heldout.py``, ``proposers.py``).

    ``financebench_seed`` seeds the synthetic generator and the pool/held-out split
    (``financebench.seed``); ``search_seeds`` seed the minibatch draws and the samplers.
    """

    name: str
    financebench_seed: int
    search_seeds: tuple[int, ...]

    def stage_overrides(self) -> list[str]:
        """``--stage-set`` items that build this split's data.

        >>> EVOLVE["test"].stage_overrides()
        ['financebench.seed=4517']
        """
        return [f"financebench.seed={self.financebench_seed}"]


@dataclass(frozen=True)
class LearningCurveSplit:
    """Task schedule and sampling seeds of ``learning curve`` (``--seed``, ``--sampling-seed``).

    The schedule seed draws the training tasks, their order and the held-out edge tasks
    (``crsp.seed``; the held-out tasks from ``crsp.seed + 1_000_003``).
    """

    name: str
    schedule_seed: int
    sampling_seeds: tuple[int, ...]


EVOLVE = {
    "dev": EvolveSplit("dev", financebench_seed=0, search_seeds=(0, 1, 2)),
    "test": EvolveSplit("test", financebench_seed=4517, search_seeds=(4511, 4512, 4513)),
}
LEARNING_CURVE = {
    "dev": LearningCurveSplit("dev", schedule_seed=2,
                              sampling_seeds=(2, 102, 202, 302, 402, 502, 602, 702)),
    "test": LearningCurveSplit("test", schedule_seed=4521,
                               sampling_seeds=tuple(range(4531, 4553))),
}
# Seeds a dev run has used for a choice (the self-play arm's schedule 0, the proposers
# benchmark's 0-2 included): no test seed may be one of them.
DEV_SEEDS_USED = frozenset({0, 1, 2, 102, 202, 302, 402, 502, 602, 702})
# The suite tasks' test files by content hash (fresh seeds, issue 73): a claim names these, and
# a second claim on the same files and question is a re-look (lab/claims_table.py).
SUITE_TEST_FILES = {
    "examples/json_extraction/test.jsonl":
        "0feea572af33a1d9175dc370dfb7ae4c92c7b8180acf57380c13316485afcf72",
    "examples/review_sentiment/test.jsonl":
        "19a5a06b8addf0366911658c71c96b131413ce6168d1de1939cf9df78f4514ba",
    "examples/word_problems/test.jsonl":
        "eab328034153bdbc0dd6d4dd124ba252d274f5bfcd296bf6ce9806dfaa8d4fe8",
}
# The suite tasks' first test files: claims and choices were made after looks at them, so they
# are dev data now (each task's make_data.py writes both).
FORMER_TEST_FILES = {
    "examples/json_extraction/dev_former_test.jsonl":
        "49662cb209a3ad1f7771eb5704594179e29e5be0237e2842307fa2f7c025eb75",
    "examples/review_sentiment/dev_former_test.jsonl":
        "c40dde53fcf0b9b9aa988599dad2d03f13ead0fe12bbe4e04a4587f534984212",
    "examples/word_problems/dev_former_test.jsonl":
        "c3d2c0f71542436c4bad87b9c1196ef8187d4aea21c67cfdf039da9cff31b59e",
}
# The budget curve of the evolve benchmarks: iterations per search.
BUDGET_CURVE = (8, 16, 32)


def evolve_split(name: str) -> EvolveSplit:
    """The evolve split called ``name``.

    >>> evolve_split("dev").search_seeds
    (0, 1, 2)
    """
    if name not in EVOLVE:
        raise ValueError(f"unknown split {name!r}; use one of {list(SPLITS)}")
    return EVOLVE[name]
