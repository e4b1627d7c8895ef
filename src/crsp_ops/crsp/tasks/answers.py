"""Extract answers from solver responses and check them against a task's truth.

Code answers compare as Python literals (code_i / code_f only build the sandbox job and judge
its result); math answers after light LaTeX normalisation, numerically when possible.

Design: docs/design/trainer.md#answers.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from crsp_ops.crsp.executor import ExecutionJob, ExecutionResult, SandboxExecutor
from crsp_ops.crsp.tasks.task_types import CodeTask, MathTask, Task, TaskType
from crsp_ops.crsp.tasks.think import extract_think
from crsp_ops.evaluation.correctness import grade, numeric_gold

_ANSWER = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
_CODE_FENCE = re.compile(r"```[a-zA-Z]*\s*\n?(.*?)```", re.DOTALL)
MATH_REL_TOL = 1e-6  # math truths are exact; this only absorbs float formatting
_LITERAL_CHARS = 100_000  # larger strings are compared as text: literal_eval can be slow


@dataclass(frozen=True)
class SolutionCheck:
    """Verdict on one solver response."""

    well_formed: bool  # has <think> and a usable <answer>
    correct: bool
    answer: str  # the extracted answer ("" when malformed)
    detail: str = ""  # why it failed, for logs


def extract_answer(response: str) -> str | None:
    r"""Content of the last ``<answer>`` block with a surrounding code fence removed.

    >>> extract_answer("<think>x</think><answer>```python\n[1, 2]\n```</answer>")
    '[1, 2]'
    """
    matches = _ANSWER.findall(response)
    if not matches:
        return None
    answer = matches[-1].strip()
    fenced = _CODE_FENCE.search(answer)
    return (fenced.group(1) if fenced else answer).strip()


def solver_answer(response: str) -> str | None:
    r"""The solver's answer: ``extract_answer``, or an ``<answer>`` left open at the very end.

    A response that stops (end of turn, or the token budget) right after its answer without
    writing ``</answer>`` still committed to that answer; the seed's format asks for the think
    and answer blocks, and the answer is taken as what follows the last ``<answer>``. An open
    ``<answer>`` is only read after ``</think>`` (never from inside the thinking).

    >>> solver_answer("<think>6*7</think><answer>42"), solver_answer("<think><answer>4")
    ('42', None)
    """
    answer = extract_answer(response)
    if answer is not None:
        return answer
    _, closed, after = response.rpartition("</think>")
    start = after.rfind("<answer>") if closed else -1
    if start < 0:
        return None
    return extract_answer(after[start:] + "</answer>")


def literal_equal(left: str, right: str) -> bool:
    """Compare two ``repr`` strings as Python literals, falling back to exact text.

    >>> literal_equal("[1, 2]", "[1,2]"), literal_equal("'a'", '"a"'), literal_equal("1", "2")
    (True, True, False)
    """
    left, right = left.strip(), right.strip()
    if left == right:
        return True
    if max(len(left), len(right)) > _LITERAL_CHARS:
        return False
    try:
        left_value, right_value = ast.literal_eval(left), ast.literal_eval(right)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False
    try:
        return type(left_value) is type(right_value) and bool(left_value == right_value)
    except (RecursionError, ValueError):
        return False


def normalize_math_answer(answer: str) -> str:
    r"""Strip LaTeX wrappers and spacing so equivalent answers compare equal as text.

    >>> normalize_math_answer(r"$\boxed{\dfrac{1}{2}}$.")
    '\\frac{1}{2}'
    """
    text = answer.strip().strip("$").strip()
    boxed = re.search(r"\\boxed\s*\{", text)
    if boxed:
        depth, start = 1, boxed.end()
        for index in range(start, len(text)):
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            if depth == 0:
                text = text[start:index]
                break
    for old, new in ((r"\dfrac", r"\frac"), (r"\tfrac", r"\frac"), (r"\left", ""),
                     (r"\right", ""), (r"\!", ""), (r"\,", ""), ("$", "")):
        text = text.replace(old, new)
    return re.sub(r"\s+", "", text).rstrip(".").lower()


def _as_fraction(text: str) -> Fraction | None:
    frac = re.fullmatch(r"\\frac\{(-?[\d.]+)\}\{(-?[\d.]+)\}", text)
    if frac:
        text = f"{frac.group(1)}/{frac.group(2)}"
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # 1,000 -> 1000
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def math_answers_match(predicted: str, truth: str) -> bool:
    r"""True when two math answers agree after normalisation (numerically if both parse).

    >>> math_answers_match(r"\boxed{0.5}", r"\frac{1}{2}"), math_answers_match("3", "4")
    (True, False)
    """
    left, right = normalize_math_answer(predicted), normalize_math_answer(truth)
    if left == right:
        return True
    left_number, right_number = _as_fraction(left), _as_fraction(right)
    return left_number is not None and left_number == right_number


def math_answer_correct(predicted: str, task: MathTask) -> bool:
    r"""True when a math answer matches the task's truth, textually or as a graded figure.

    >>> task = MathTask("What share of 8 is 2, in percent?", "", "25")
    >>> math_answer_correct("25%", task), math_answer_correct("It is 25 or 30", task)
    (True, False)
    """
    if math_answers_match(predicted, task.answer):
        return True
    if numeric_gold(task.answer) is None:
        return False
    return grade(predicted, task.answer, question=task.question, rel_tol=MATH_REL_TOL).is_correct


def verification_job(task: CodeTask, answer: str) -> ExecutionJob | None:
    """The sandbox job that checks a code_i / code_f answer, or ``None`` if none is needed.

    code_i runs the task's program on the proposed input; code_f runs the proposed program on
    every task input. code_o needs no execution.
    """
    if task.task_type is TaskType.CODE_I:
        return ExecutionJob(task.program, (answer,))
    if task.task_type is TaskType.CODE_F:
        return ExecutionJob(answer, task.inputs)
    return None


def judge_execution(task: CodeTask, result: ExecutionResult) -> bool:
    """True when a verification run reproduced the task's outputs.

    code_i compares against the single target output; code_f against every output.
    """
    if not result.ok:
        return False
    expected = task.outputs[:1] if task.task_type is TaskType.CODE_I else task.outputs
    return len(result.outputs) == len(expected) and all(
        literal_equal(got, want) for got, want in zip(result.outputs, expected, strict=True))


def _strip_call_wrapper(answer: str) -> str:
    """Accept ``f([1, 2], 3)`` for the argument list ``[1, 2], 3``."""
    match = re.fullmatch(r"f\((.*)\)", answer.strip(), re.DOTALL)
    return match.group(1) if match else answer


def _answer_usable(task: Task, answer: str) -> bool:
    if not answer:
        return False
    if task.task_type is TaskType.CODE_F:
        return re.search(r"^\s*def\s+f\s*\(", answer, re.MULTILINE) is not None
    return True


def usable_answer(task: Task, response: str) -> str | None:
    """The answer of a well-formed solver response (``<think>`` and a usable ``<answer>``).

    >>> usable_answer(MathTask("1+1?", "", "2"), "<think>1+1</think><answer>2</answer>")
    '2'
    >>> usable_answer(MathTask("1+1?", "", "2"), "2") is None
    True
    """
    answer = solver_answer(response)
    if extract_think(response) is None or answer is None or not _answer_usable(task, answer):
        return None
    return answer


def check_solutions(tasks: Sequence[Task], responses: Sequence[str],
                    executor: SandboxExecutor) -> list[SolutionCheck]:
    """Check solver responses against their tasks; runs code answers in one sandbox batch.

    Args:
        tasks: one task per response.
        responses: the solver's full responses.
        executor: the sandbox used for code_i and code_f answers.

    Returns:
        One ``SolutionCheck`` per response, in order.
    """
    if len(tasks) != len(responses):
        raise ValueError(f"{len(tasks)} tasks but {len(responses)} responses")
    checks: list[SolutionCheck | None] = [None] * len(tasks)
    pending: list[tuple[int, ExecutionJob]] = []
    for index, (task, response) in enumerate(zip(tasks, responses, strict=True)):
        answer = usable_answer(task, response)
        if answer is None:
            checks[index] = SolutionCheck(False, False, "", "missing <think> or usable <answer>")
        elif isinstance(task, MathTask):
            checks[index] = SolutionCheck(True, math_answer_correct(answer, task), answer)
        elif task.task_type is TaskType.CODE_O:
            checks[index] = SolutionCheck(True, literal_equal(answer, task.outputs[0]), answer)
        else:
            if task.task_type is TaskType.CODE_I:
                answer = _strip_call_wrapper(answer)
            pending.append((index, verification_job(task, answer)))
    results = executor.run_many([job for _, job in pending]) if pending else []
    for (index, job), result in zip(pending, results, strict=True):
        task = tasks[index]
        answer = job.inputs[0] if task.task_type is TaskType.CODE_I else job.program
        checks[index] = SolutionCheck(True, judge_execution(task, result), answer,
                                      f"{result.status.value}: {result.detail}"[:500])
    return [check for check in checks if check is not None]
