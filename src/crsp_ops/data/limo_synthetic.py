r"""Seeded generator of LIMO-schema math problems whose answers are computed, hence right.

Each problem family draws its numbers, computes the answer with integer arithmetic and writes a
step-by-step solution that ends, like LIMO's, with ``\boxed{answer}``.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from crsp_ops.data.examples import LimoExample

Problem = tuple[str, list[str], int]  # question, solution steps, answer


def generate_limo_examples(*, count: int, seed: int) -> list[LimoExample]:
    """Return ``count`` synthetic LIMO examples; the same ``seed`` gives the same examples.

    Args:
        count: number of examples (>= 0).
        seed: seed of the generator.

    Returns:
        Examples with ``answer`` equal to the computed integer as a string.
    """
    if count < 0:
        raise ValueError(f"count must be >= 0, got {count}")
    rng = random.Random(seed)
    examples = []
    for _ in range(count):
        family = rng.choice(PROBLEM_FAMILIES)
        question, steps, answer = family(rng)
        examples.append(
            LimoExample(question=question, solution=_solution(steps, answer), answer=str(answer))
        )
    return examples


def _solution(steps: list[str], answer: int) -> str:
    numbered = "\n".join(f"Step {i}: {step}" for i, step in enumerate(steps, start=1))
    return f"{numbered}\n\n**Final Answer**\n\\boxed{{{answer}}}"


def _boxes(rng: random.Random) -> Problem:
    boxes, per_box = rng.randint(2, 12), rng.randint(3, 24)
    total = boxes * per_box
    sold = rng.randint(1, total - 1)
    name, item = rng.choice(_NAMES), rng.choice(_ITEMS)
    question = (
        f"{name} packs {boxes} boxes with {per_box} {item} in each box and then sells {sold} "
        f"{item}. How many {item} are left?"
    )
    steps = [
        f"{name} starts with {boxes} × {per_box} = {total} {item}.",
        f"After selling {sold}, {total} − {sold} = {total - sold} {item} remain.",
    ]
    return question, steps, total - sold


def _linear_equation(rng: random.Random) -> Problem:
    x, a, b = rng.randint(-20, 20), rng.randint(2, 9), rng.randint(-50, 50)
    c = a * x + b
    question = f"Solve for x: {a}x {_signed(b)} = {c}."
    steps = [
        f"Subtract {b} from both sides: {a}x = {c} − ({b}) = {c - b}.",
        f"Divide both sides by {a}: x = {c - b} / {a} = {x}.",
    ]
    return question, steps, x


def _percent_of(rng: random.Random) -> Problem:
    percent = rng.choice([5, 10, 12, 15, 20, 25, 30, 40, 50, 75])
    # A multiple of 100 keeps the answer an integer for every listed percentage.
    base = 100 * rng.randint(1, 40)
    answer = percent * base // 100
    question = f"What is {percent}% of {base}?"
    steps = [
        f"{percent}% means {percent}/100.",
        f"{percent}/100 × {base} = {percent * base}/100 = {answer}.",
    ]
    return question, steps, answer


def _series_sum(rng: random.Random) -> Problem:
    n = rng.randint(5, 200)
    answer = n * (n + 1) // 2
    question = f"What is the sum of the integers from 1 to {n}?"
    steps = [
        "Pair the first and last terms: each pair sums to the same value.",
        f"The sum is n(n + 1)/2 with n = {n}: {n} × {n + 1} / 2 = {answer}.",
    ]
    return question, steps, answer


def _ages(rng: random.Random) -> Problem:
    young, gap, years = rng.randint(3, 30), rng.randint(1, 25), rng.randint(1, 15)
    name, other = rng.sample(_NAMES, 2)
    old = young + gap
    answer = young + old + 2 * years
    question = (
        f"{name} is {young} years old and {other} is {gap} years older. "
        f"What will the sum of their ages be in {years} years?"
    )
    steps = [
        f"{other} is {young} + {gap} = {old} years old.",
        f"Their ages now sum to {young} + {old} = {young + old}.",
        f"In {years} years each is {years} older: {young + old} + 2 × {years} = {answer}.",
    ]
    return question, steps, answer


def _expression(rng: random.Random) -> Problem:
    a, b, c = rng.randint(2, 50), rng.randint(2, 50), rng.randint(2, 12)
    inner = a + b
    answer = inner * c
    question = f"Compute ({a} + {b}) × {c}."
    steps = [f"First the parentheses: {a} + {b} = {inner}.", f"Then {inner} × {c} = {answer}."]
    return question, steps, answer


def _signed(value: int) -> str:
    return f"+ {value}" if value >= 0 else f"− {-value}"


_NAMES = ("Ava", "Ben", "Chen", "Dara", "Eli", "Fatima", "Gus", "Hana", "Ivan", "Jade")
_ITEMS = ("apples", "cookies", "pencils", "marbles", "books", "candles")

PROBLEM_FAMILIES: tuple[Callable[[random.Random], Problem], ...] = (
    _boxes,
    _linear_equation,
    _percent_of,
    _series_sum,
    _ages,
    _expression,
)
