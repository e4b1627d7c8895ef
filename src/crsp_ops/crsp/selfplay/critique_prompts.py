"""Prompts of the critique role and of the thinking-effort (creativity) grader.

Both ask for JSON ``{"grade": ..., "rationale": ...}``, grade first, and are built like the
solver's (format, worked examples, an opened assistant turn) so a small model hits the format.

Design: docs/design/trainer.md#critique_prompts.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsp_ops.crsp.tasks.answers import solver_answer
from crsp_ops.crsp.tasks.think import extract_think, strip_think
from crsp_ops.inference.backend import Message
from crsp_ops.inference.hf_chat import assistant_prefill

CREATIVITY_GRADING_PROMPT = """\
You grade how much genuine thinking effort a reasoning trace shows. You will see only the \
trace (the text the author wrote inside <think> tags). Judge the process, never whether the \
final answer is right: a wrong answer reached by a careful, inventive search deserves a high \
grade, and a right answer stated without visible work deserves a low one.

Weigh four things:
1. Diversity of strategies: did the author try more than one way in, or compare approaches?
2. Depth: are the steps worked through in detail rather than asserted?
3. Creativity and novelty: are there unusual angles, reformulations or constructions?
4. Persistence and rigor: does the author check intermediate results, test cases or edge \
cases, notice mistakes and repair them?

Padding, repetition and filler are not effort and must not raise the grade.

Reply with a single JSON object and nothing else:
{"grade": <number from 0 to 1>, "rationale": "<one sentence citing the trace>"}
"""

CRITIQUE_ROLE_PROMPT = """\
You review a proposed solution to a task. First check it briefly inside <think> and </think>: \
work out the answer yourself and compare it with the solution. Then, after </think>, write \
exactly one verdict line, either

Verdict: correct
or
Verdict: incorrect

and finally one JSON object grading the solution's thinking effort (diversity of strategies, \
depth, creativity, persistence and rigor; effort, not correctness):
{"grade": <number from 0 to 1>, "rationale": "<one sentence>"}
"""

CRITIQUE_PREFILL = "<think>"  # the critique's turn starts inside the thinking block
GRADING_PREFILL = '{"grade": '  # the grader's reply starts inside its JSON object
# Two worked critiques, one of each verdict, the check on its own lines (see the docstring).
_EXAMPLES = (
    ("What is 6 times 7?", "<think>6 times 7 is 48.</think><answer>48</answer>",
     '<think>\n6 times 7 is 42, not 48.\n</think>\nVerdict: incorrect\n'
     '{"grade": 0.2, "rationale": "One step, never checked."}'),
    ("What is 9 minus 4?", "<think>9 minus 4: count down 4 from 9, 5.</think><answer>5</answer>",
     '<think>\n9 - 4 = 5, the same.\n</think>\nVerdict: correct\n'
     '{"grade": 0.4, "rationale": "Counted down and got it."}'),
)
# Ends the critique's user turn: without it a small model answers the task instead of judging.
_REVIEW_REQUEST = ("Judge this solution: <think>short check</think>, then the Verdict line "
                   "and the JSON grade.")
_EXAMPLE_TRACE = "6 times 7 is 48."
_EXAMPLE_GRADE = '{"grade": 0.1, "rationale": "A single unchecked step, no other approach."}'


def shown_solution(solution: str) -> str:
    """The solver's response as the critic sees it: its reasoning and answer, without the tags.

    A small model shown ``<think>``/``<answer>`` tags in the solution copies them and answers
    the task itself instead of judging it.

    >>> print(shown_solution("<think>6 times 7 is 48.</think><answer>48</answer>"))
    Reasoning: 6 times 7 is 48.
    Final answer: 48
    >>> print(shown_solution("just 5"))
    Reasoning: (none)
    Final answer: just 5
    """
    final = solver_answer(solution) or strip_think(solution).strip()
    return (f"Reasoning: {extract_think(solution) or '(none)'}\n"
            f"Final answer: {final or '(none)'}")


def _pair(task_prompt: str, solution: str) -> str:
    return (f"## Task\n{task_prompt}\n\n## Proposed solution\n{shown_solution(solution)}\n\n"
            f"{_REVIEW_REQUEST}")


def _trace(thinking: str) -> str:
    return f"Reasoning trace to grade:\n<think>\n{thinking}\n</think>"


def creativity_grading_messages(thinking: str) -> list[Message]:
    """Chat messages asking a grader to score the effort shown in ``thinking``.

    Args:
        thinking: the reasoning trace (content of the ``<think>`` block) to grade.

    Returns:
        The grading prompt (system), one worked grading, the trace, and the ``{"grade": ``
        prefill.

    >>> [m["role"] for m in creativity_grading_messages("tried two ways")]
    ['system', 'user', 'assistant', 'user', 'assistant']
    """
    return [
        {"role": "system", "content": CREATIVITY_GRADING_PROMPT},
        {"role": "user", "content": _trace(_EXAMPLE_TRACE)},
        {"role": "assistant", "content": _EXAMPLE_GRADE},
        {"role": "user", "content": _trace(thinking)},
        {"role": "assistant", "content": GRADING_PREFILL},
    ]


def critique_messages(task_prompt: str, solution: str) -> list[Message]:
    """Chat messages asking the policy, in its critique role, to judge ``solution``.

    Args:
        task_prompt: the task as the solver saw it, without the solver's response format
            (``tasks.task_statement``).
        solution: the solver's full response.

    Returns:
        The critique instructions (system), two worked critiques (one of each verdict), the
        pair to judge, and the ``<think>`` prefill.

    >>> [m["role"] for m in critique_messages("1+1?", "<think>1+1</think><answer>2</answer>")]
    ['system', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant']
    """
    examples: list[Message] = []
    for example_task, example_solution, example_critique in _EXAMPLES:
        examples += [{"role": "user", "content": _pair(example_task, example_solution)},
                     {"role": "assistant", "content": example_critique}]
    return [
        {"role": "system", "content": CRITIQUE_ROLE_PROMPT},
        *examples,
        {"role": "user", "content": _pair(task_prompt, solution)},
        {"role": "assistant", "content": CRITIQUE_PREFILL},
    ]


def critique_response(messages: Sequence[Message], text: str) -> str:
    """The critique's whole turn: the prefill the backend continued, then the generated ``text``.

    >>> critique_response(critique_messages("q", "s"), "ok</think>Verdict: correct")
    '<think>ok</think>Verdict: correct'
    """
    return assistant_prefill(messages) + text


def grading_response(messages: Sequence[Message], text: str) -> str:
    """The grader's whole reply: its ``{"grade": `` prefill, then the generated ``text``.

    >>> grading_response(creativity_grading_messages("t"), '0.4, "rationale": "r"}')
    '{"grade": 0.4, "rationale": "r"}'
    """
    return assistant_prefill(messages) + text
