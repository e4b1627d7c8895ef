r"""Seeded arithmetic word problems at a small model's edge, in the LIMO row schema.

RL needs groups that mix right and wrong answers, and LIMO-style problems are out of a 135M
model's reach; these are one or two operations on small numbers, ``difficulty`` 1–3.

>>> rows = generate_edge_examples(count=3, seed=0, difficulty=1)
>>> [row.family for row in rows] == [row.family for row in generate_edge_examples(
...     count=3, seed=0, difficulty=1)]
True
>>> rows[0].example.solution.endswith("\\boxed{" + rows[0].example.answer + "}")
True

Design: docs/design/platform.md#edge_math.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from crsp_ops.data.examples import LimoExample

EDGE_SOURCE = "edge"  # the ``limo.source`` / ``crsp.math_source`` value that selects this set
DIFFICULTIES = (1, 2, 3)


@dataclass(frozen=True)
class EdgeProblem:
    """One generated problem: the LIMO row and the family it came from."""

    example: LimoExample
    family: str


Draw = Callable[[random.Random, int], tuple[str, list[str], int]]


def _operand(rng: random.Random, difficulty: int, *, low: int = 2) -> int:
    return rng.randint(max(low, 10 ** (difficulty - 1)), 10 ** difficulty - 1)


def _add(rng: random.Random, difficulty: int) -> tuple[str, list[str], int]:
    a, b = _operand(rng, difficulty), _operand(rng, difficulty)
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    question = f"{name} has {a} {item} and gets {b} more. How many {item} does {name} have now?"
    return question, [f"{a} + {b} = {a + b}."], a + b


def _subtract(rng: random.Random, difficulty: int) -> tuple[str, list[str], int]:
    a, b = sorted((_operand(rng, difficulty), _operand(rng, difficulty)), reverse=True)
    a += 1  # strictly more than is given away
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    question = f"{name} has {a} {item} and gives away {b}. How many {item} are left?"
    return question, [f"{a} − {b} = {a - b}."], a - b


def _multiply(rng: random.Random, difficulty: int) -> tuple[str, list[str], int]:
    groups = rng.randint(2, 3 + 3 * difficulty)
    each = _operand(rng, max(difficulty - 1, 1))
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    question = (f"{name} has {groups} bags with {each} {item} in each bag. "
                f"How many {item} does {name} have in total?")
    return question, [f"{groups} × {each} = {groups * each}."], groups * each


def _add_then_subtract(rng: random.Random, difficulty: int) -> tuple[str, list[str], int]:
    a, b = _operand(rng, difficulty), _operand(rng, difficulty)
    c = rng.randint(1, a + b - 1)
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    question = (f"{name} has {a} {item}, gets {b} more, then gives away {c}. "
                f"How many {item} does {name} have now?")
    steps = [f"{a} + {b} = {a + b}.", f"{a + b} − {c} = {a + b - c}."]
    return question, steps, a + b - c


_NAMES = ("Ava", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jade")
_ITEMS = ("apples", "cookies", "pencils", "marbles", "books", "stickers")

EDGE_FAMILIES: dict[str, Draw] = {
    "add": _add,
    "subtract": _subtract,
    "multiply": _multiply,
    "add_subtract": _add_then_subtract,
}


def _solution(steps: list[str], answer: int) -> str:
    numbered = "\n".join(f"Step {i}: {step}" for i, step in enumerate(steps, start=1))
    return f"{numbered}\n\n**Final Answer**\n\\boxed{{{answer}}}"


def generate_edge_examples(*, count: int, seed: int, difficulty: int = 1,
                           families: tuple[str, ...] = tuple(EDGE_FAMILIES)
                           ) -> list[EdgeProblem]:
    """``count`` problems cycling through ``families``; the same arguments give the same rows.

    Args:
        count: number of problems (>= 0).
        seed: generator seed.
        difficulty: 1, 2 or 3 (digits per operand).
        families: names from ``EDGE_FAMILIES``, drawn in turn (equal shares).

    Raises:
        ValueError: a bad count, difficulty or family name.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    if difficulty not in DIFFICULTIES:
        raise ValueError(f"difficulty must be one of {DIFFICULTIES}, got {difficulty}")
    unknown = sorted(set(families) - set(EDGE_FAMILIES))
    if unknown or not families:
        raise ValueError(f"unknown edge families {unknown or '(none given)'}; "
                         f"known: {', '.join(EDGE_FAMILIES)}")
    rng = random.Random(f"edge:{seed}:{difficulty}")
    problems = []
    for index in range(count):
        family = families[index % len(families)]
        question, steps, answer = EDGE_FAMILIES[family](rng, difficulty)
        problems.append(EdgeProblem(
            LimoExample(question=question, solution=_solution(steps, answer), answer=str(answer)),
            family))
    return problems
