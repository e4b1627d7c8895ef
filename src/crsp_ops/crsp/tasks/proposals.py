"""Turn a proposer response into a validated task: parse the blocks, run them in the sandbox.

A proposal is valid when it parses, its program runs cleanly and deterministically on every
input in the sandbox, and (code_f) it has enough distinct inputs; the sandbox's outputs become
the task's truth. Validity is the proposer's "passed" for the format rule.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from crsp_ops.crsp.executor import ExecutionJob, SandboxExecutor
from crsp_ops.crsp.tasks.task_types import CodeTask, TaskType
from crsp_ops.crsp.tasks.think import extract_think

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_BLOCK = re.compile(r"```(python|input|message)[ \t]*\n(.*?)```", re.DOTALL | re.IGNORECASE)


@dataclass(frozen=True)
class ProposalDraft:
    """A parsed, not yet executed, proposal."""

    task_type: TaskType
    program: str
    inputs: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class ProposalCheck:
    """Outcome of validating one proposal."""

    well_formed: bool  # parsed into a draft
    task: CodeTask | None  # the validated task, None if invalid
    detail: str = ""

    @property
    def valid(self) -> bool:
        """True when the proposal became a task."""
        return self.task is not None


def answer_body(response: str) -> str | None:
    """The last ``<answer>`` block, or an ``<answer>`` left open after ``</think>`` at the end.

    As for the solver (``answers.solver_answer``), a turn that stops right after its blocks
    without writing ``</answer>`` still committed to them; the blocks themselves must be closed.

    >>> answer_body("<think>t</think><answer>A</answer>"), answer_body("<think>t</think><answer>B")
    ('A', 'B')
    >>> answer_body("<think><answer>C") is None
    True
    """
    answers = _ANSWER.findall(response)
    if answers:
        return answers[-1]
    _, closed, after = response.rpartition("</think>")
    start = after.lower().rfind("<answer>") if closed else -1
    return after[start + len("<answer>"):] if start >= 0 else None


def parse_proposal(response: str, task_type: TaskType, *, min_inputs_code_f: int
                   ) -> ProposalDraft | None:
    """Parse ``<answer>`` blocks (```python, ```input, ```message) into a draft.

    code_f needs at least two distinct inputs; its message (a hint for the solver) is optional.

    Args:
        response: the proposer's whole turn (with its ``<think>`` prefill put back:
            ``prompts.propose_response``).
        task_type: the code task type that was requested.
        min_inputs_code_f: fewest distinct inputs a code_f proposal needs (>= 2).

    Returns:
        The draft, or ``None`` when the format is not followed.
    """
    answer = answer_body(response)
    if extract_think(response) is None or answer is None:
        return None
    blocks = [(kind.lower(), body.strip()) for kind, body in _BLOCK.findall(answer)]
    programs = [body for kind, body in blocks if kind == "python"]
    inputs = tuple(dict.fromkeys(body for kind, body in blocks if kind == "input" and body))
    messages = [body for kind, body in blocks if kind == "message"]
    if len(programs) != 1 or not inputs:
        return None
    if task_type is TaskType.CODE_F:
        if len(inputs) < max(2, min_inputs_code_f):
            return None
    else:
        inputs = inputs[:1]
    return ProposalDraft(task_type, programs[0], inputs, messages[0] if messages else "")


def validate_proposals(responses: Sequence[str], task_types: Sequence[TaskType],
                       executor: SandboxExecutor, *, min_inputs_code_f: int
                       ) -> list[ProposalCheck]:
    """Parse and sandbox-run every proposal; one executor batch for all of them.

    Args:
        responses: proposer responses (whole turns, prefill included).
        task_types: the type requested from each response.
        executor: the sandbox (its determinism check applies).
        min_inputs_code_f: see ``parse_proposal``.

    Returns:
        One ``ProposalCheck`` per response, in order.
    """
    drafts = [parse_proposal(r, t, min_inputs_code_f=min_inputs_code_f)
              for r, t in zip(responses, task_types, strict=True)]
    runnable = [(i, d) for i, d in enumerate(drafts) if d is not None]
    results = executor.run_many([ExecutionJob(d.program, d.inputs) for _, d in runnable])
    checks = [ProposalCheck(False, None, "format not followed")] * len(drafts)
    for (index, draft), result in zip(runnable, results, strict=True):
        if not result.ok:
            checks[index] = ProposalCheck(True, None, f"{result.status.value}: {result.detail}"
                                          [:500])
        elif draft.task_type is TaskType.CODE_F and len(set(result.outputs)) < 2:
            checks[index] = ProposalCheck(True, None, "code_f outputs are all identical")
        else:
            task = CodeTask(draft.task_type, draft.program, draft.inputs, result.outputs,
                            draft.message)
            checks[index] = ProposalCheck(True, task)
    return checks
