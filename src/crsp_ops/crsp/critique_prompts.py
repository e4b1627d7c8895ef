"""Prompts of the critique role and of the thinking-effort (creativity) grader.

Both ask for JSON ``{"rationale": ..., "grade": ...}`` so one parser (``critique.parse_grade``)
reads either. The grading prompt is our own wording of the seed's four dimensions and, as in
RLSP, rewards the effort of the search, not whether it reached the right answer.
"""

from __future__ import annotations

from crsp_ops.inference.backend import Message

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
{"rationale": "<two or three sentences citing the trace>", "grade": <number from 0 to 1>}
"""

CRITIQUE_ROLE_PROMPT = """\
You review a proposed solution to a task. First reason step by step inside <think> and \
</think>: restate what the task asks, work out the answer yourself, and compare it with the \
solution. Then, after </think>, write exactly one verdict line, either

Verdict: correct
or
Verdict: incorrect

and finally one JSON object grading the solution's thinking effort (diversity of strategies, \
depth, creativity, persistence and rigor; effort, not correctness):
{"rationale": "<two or three sentences>", "grade": <number from 0 to 1>}
"""


def creativity_grading_messages(thinking: str) -> list[Message]:
    """Chat messages asking a grader to score the effort shown in ``thinking``.

    Args:
        thinking: the reasoning trace (content of the ``<think>`` block) to grade.

    Returns:
        A system message with the grading prompt and a user message with the trace.
    """
    return [
        {"role": "system", "content": CREATIVITY_GRADING_PROMPT},
        {"role": "user", "content": f"Reasoning trace to grade:\n<think>\n{thinking}\n</think>"},
    ]


def critique_messages(task_prompt: str, solution: str) -> list[Message]:
    """Chat messages asking the policy, in its critique role, to judge ``solution``.

    Args:
        task_prompt: the task exactly as the solver saw it.
        solution: the solver's full response.

    Returns:
        A system message with the critique instructions and a user message with the pair.
    """
    return [
        {"role": "system", "content": CRITIQUE_ROLE_PROMPT},
        {"role": "user",
         "content": f"## Task\n{task_prompt}\n\n## Proposed solution\n{solution}"},
    ]
