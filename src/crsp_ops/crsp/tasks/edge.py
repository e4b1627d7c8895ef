"""Self-play math tasks at the model's edge (``crsp.math_source=edge``): training and held-out.

The held-out problems come from their own seed and are removed from the training problems by
question text, so no held-out question is ever trained on.
"""

from __future__ import annotations

from crsp_ops.config.selfplay_config import CrspSettings
from crsp_ops.crsp.tasks.task_types import MathTask
from crsp_ops.data.edge_math import EdgeProblem, generate_edge_examples

HELDOUT_SEED_OFFSET = 1_000_003  # the held-out problems' seed is crsp.seed + this


def edge_task(problem: EdgeProblem) -> MathTask:
    """A ``MathTask`` that keeps the problem's family (for per-family solve rates)."""
    row = problem.example
    return MathTask(row.question, row.solution, row.answer, family=problem.family)


def edge_math_tasks(crsp: CrspSettings, *, heldout: int | None = None
                    ) -> tuple[list[MathTask], list[MathTask]]:
    """``(training, held-out)`` edge tasks for ``crsp`` (``heldout`` defaults to its count).

    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Crsp:
    ...     seed: int = 0; edge_difficulty: int = 1; edge_tasks: int = 50; heldout_math: int = 20
    >>> train, held = edge_math_tasks(Crsp())
    >>> len(held), not {t.question for t in train} & {t.question for t in held}
    (20, True)
    """
    count = crsp.heldout_math if heldout is None else heldout
    held = [edge_task(p) for p in generate_edge_examples(
        count=count, seed=crsp.seed + HELDOUT_SEED_OFFSET, difficulty=crsp.edge_difficulty)]
    seen = {task.question for task in held}
    train = [edge_task(p) for p in generate_edge_examples(
        count=crsp.edge_tasks, seed=crsp.seed, difficulty=crsp.edge_difficulty)
        if p.example.question not in seen]
    return train, held
