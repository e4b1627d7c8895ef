"""Worked edge-math answers in the trainer's solve format, some with a deliberate slip.

The slip (a stray minus sign before the answer) is one token a tiny model reproduces exactly,
so RL can switch it off without touching the digits.

Design: docs/design/platform.md#solve_corpus.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence

from crsp_ops.data.edge_math import EdgeProblem
from crsp_ops.models.chat_corpus import ChatSample

# Share of answers with a slip, per edge family: below 0.5 the greedy answer is right, above
# it wrong (and right in about 1 - share of samples). Addition, the family a ~1M-parameter model
# learns best, is the one to fix: greedy slips there at step 0 while samples are right often
# enough for RL to reinforce. Edge families not listed never slip.
SLIP_SHARES: Mapping[str, float] = {
    "add": 0.6,
    "subtract": 0.15,
    "multiply": 0.15,
    "add_subtract": 0.15,
}

Render = Callable[[str], Sequence[Mapping[str, str]]]
_STEP = re.compile(r"^Step \d+: (.*)$", re.MULTILINE)


def solve_reply(problem: EdgeProblem, *, slip: bool) -> str:
    r"""The worked answer: the problem's steps in ``<think>``, the number in ``<answer>``.

    >>> from crsp_ops.data.examples import LimoExample
    >>> row = LimoExample("Ava has 3 pens and gets 4 more. How many?",
    ...                   "Step 1: 3 + 4 = 7.\n\n**Final Answer**\n\boxed{7}", "7")
    >>> solve_reply(EdgeProblem(row, "add"), slip=False)
    '<think>Step 1: 3 + 4 = 7.</think><answer>7</answer>'
    >>> solve_reply(EdgeProblem(row, "add"), slip=True)
    '<think>Step 1: 3 + 4 = 7.</think><answer>-7</answer>'
    """
    steps = _STEP.findall(problem.example.solution)
    thinking = " ".join(f"Step {number}: {step}" for number, step in enumerate(steps, start=1))
    sign = "-" if slip else ""
    return f"<think>{thinking}</think><answer>{sign}{int(problem.example.answer)}</answer>"


def solve_samples(problems: Sequence[EdgeProblem], *, render: Render, seed: int,
                  slip_shares: Mapping[str, float] = SLIP_SHARES) -> list[ChatSample]:
    """One solve conversation per problem; a seeded draw per problem decides its slip.

    Args:
        problems: edge problems (keep the held-out ones out: ``exclude_questions``).
        render: the solver's messages for a question, ending with the assistant prefill
            (``crsp.tasks.solve_messages``); the prefill is trained as the reply's start.
        seed: seed of the slip draws.
        slip_shares: per-family share of answers with a slip.
    """
    rng = random.Random(f"solve-corpus:{seed}")
    samples = []
    for problem in problems:
        messages = [dict(message) for message in render(problem.example.question)]
        prefill = messages.pop()["content"] if messages[-1]["role"] == "assistant" else ""
        user = messages.pop()
        if user["role"] != "user":
            raise ValueError(f"render must end with the user turn (and a prefill), got {user}")
        slip = rng.random() < slip_shares.get(problem.family, 0.0)
        reply = solve_reply(problem, slip=slip)
        if not reply.startswith(prefill):
            raise ValueError(f"the reply {reply[:20]!r} does not start with the prefill "
                             f"{prefill!r}")
        samples.append(ChatSample(user=user["content"], assistant=reply, padded=False,
                                  context=tuple(messages)))
    return samples


def exclude_questions(problems: Sequence[EdgeProblem], questions: set[str]) -> list[EdgeProblem]:
    """``problems`` without those whose question is in ``questions`` (the held-out ones)."""
    return [problem for problem in problems if problem.example.question not in questions]
