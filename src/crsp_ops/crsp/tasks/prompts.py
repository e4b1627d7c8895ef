"""Prompt builders: what the solver sees for each task type, and what the proposer is asked.

Every role answers ``<think>...</think><answer>...</answer>``; conversations carry the format,
a worked example and an opened ``<think>`` turn, so a small model hits the format.

Design: docs/design/trainer.md#prompts.
"""

from __future__ import annotations

from collections.abc import Sequence

from crsp_ops.crsp.tasks.task_types import CodeTask, MathTask, PromptTask, Task, TaskType
from crsp_ops.inference.backend import Message
from crsp_ops.inference.hf_chat import as_messages, assistant_prefill

RESPONSE_FORMAT = ("Reason step by step inside <think> and </think>, then give only the final "
                   "answer inside <answer> and </answer>.")
SOLVE_SYSTEM = ("Reply in exactly this format: <think>short reasoning</think><answer>final "
                "answer</answer>")
SOLVE_PREFILL = "<think>"  # the solver's turn starts inside the thinking block
_EXAMPLE_QUESTION = "What is 6 times 7?"
_EXAMPLE_REPLY = "<think>6 times 7 is 42.</think><answer>42</answer>"

_SOLVE_INSTRUCTIONS = {
    TaskType.CODE_O: "Predict the value f returns for the input below. Answer with the value as "
                     "a Python literal (its repr).",
    TaskType.CODE_I: "Find arguments for which f returns exactly the output below. Answer with "
                     "the arguments as they would appear inside f(...), e.g. [1, 2], 3.",
    TaskType.CODE_F: "Write a Python function f that maps every input below to its output and "
                     "matches the message. Answer with the complete program (def f(...): ...).",
}

_PROPOSE_INSTRUCTIONS = {
    TaskType.CODE_O: "a deduction task: a program and one input whose output a solver must "
                     "predict",
    TaskType.CODE_I: "an abduction task: a program and one input; the solver will see the "
                     "output and must find an input producing it",
    TaskType.CODE_F: "an induction task: a program, 4 to 6 inputs covering different cases, and "
                     "a one-sentence message hinting at what f does; the solver must write f",
}


PROPOSE_SYSTEM = ("Propose one programming task: a deterministic Python function f using only "
                  "the standard library (no os, sys, files, network, randomness or time) that "
                  "runs in well under a second. Reply in exactly this format: <think>one short "
                  "sentence</think><answer>the fenced blocks asked for</answer>")
PROPOSE_PREFILL = "<think>"  # the proposer's turn starts inside the thinking block
# train.propose_scaffold: the fixed thinking of a scaffolded proposal (it earns no reward).
PROPOSE_SCAFFOLD_THINK = "A new, short, deterministic task in the format."
# One worked proposal per type: tiny, generic, and in the exact format parse_proposal reads.
_EXAMPLE_PROGRAM = "def f(xs):\n    return [x * 2 for x in xs if x > 0]"
_EXAMPLE_INPUTS = ("[3, -1, 2]", "[-5, 0]", "[1]", "[]")


def _fence(body: str, language: str = "") -> str:
    return f"```{language}\n{body}\n```"


def solve_prompt(task: Task) -> str:
    r"""The solver's user prompt for ``task``: the task, then the response format.

    >>> "f(3)" in solve_prompt(CodeTask(TaskType.CODE_O, "def f(n):\n    return n", ("3",),
    ...                                  ("3",)))
    True
    """
    return f"{task_statement(task)}\n\n{RESPONSE_FORMAT}"


def task_statement(task: Task) -> str:
    """The task as the solver sees it, without the response format (what a critique is shown).

    >>> task_statement(MathTask("1+1?", "", "2"))
    '1+1?'
    """
    if isinstance(task, MathTask):
        return task.question
    if isinstance(task, PromptTask):
        return next((m["content"] for m in reversed(as_messages(task.prompt))
                     if m["role"] == "user"), "")
    parts = [_SOLVE_INSTRUCTIONS[task.task_type]]
    if task.task_type is TaskType.CODE_O:
        parts += [_fence(task.program, "python"), f"Input: f({task.inputs[0]})"]
    elif task.task_type is TaskType.CODE_I:
        parts += [_fence(task.program, "python"), f"Output: {task.outputs[0]}"]
    else:
        shown = zip(task.inputs[: task.num_shown], task.outputs[: task.num_shown], strict=True)
        parts += [f"f({arguments}) == {output}" for arguments, output in shown]
        if task.message:  # a code_f proposal's hint is optional
            parts.append(f"Message: {task.message}")
    return "\n\n".join(parts)


def solve_messages(task: Task) -> list[Message]:
    """Chat messages for the solver role: format, worked example, task, ``<think>`` prefill.

    A dataset row's conversation is its own prompt (a string is one user turn).

    >>> [m["role"] for m in solve_messages(MathTask("1+1?", "", "2"))]
    ['system', 'user', 'assistant', 'user', 'assistant']
    >>> solve_messages(PromptTask("Say hi."))
    [{'role': 'user', 'content': 'Say hi.'}]
    """
    if isinstance(task, PromptTask):
        return as_messages(task.prompt)
    return [
        {"role": "system", "content": SOLVE_SYSTEM},
        {"role": "user", "content": f"{_EXAMPLE_QUESTION}\n\n{RESPONSE_FORMAT}"},
        {"role": "assistant", "content": _EXAMPLE_REPLY},
        {"role": "user", "content": solve_prompt(task)},
        {"role": "assistant", "content": SOLVE_PREFILL},
    ]


def solve_response(messages: Sequence[Message], text: str) -> str:
    """The solver's whole turn: the prefill the backend continued, then the generated ``text``.

    >>> solve_response(solve_messages(MathTask("1+1?", "", "2")), "1+1=2</think><answer>2</answer>")
    '<think>1+1=2</think><answer>2</answer>'
    """
    return assistant_prefill(messages) + text


def _propose_format(task_type: TaskType) -> str:
    """The answer blocks requested for ``task_type`` (code_f: two inputs and a message)."""
    inputs = "\n".join(_fence("<arguments, e.g. [1, 2], 3>", "input")
                       for _ in range(2 if task_type is TaskType.CODE_F else 1))
    message = f"\n{_fence('<one sentence>', 'message')}" if task_type is TaskType.CODE_F else ""
    return ("Reply with <think>one sentence</think>, then <answer>, these blocks and "
            f"</answer>:\n{_fence('def f(...):', 'python')}\n{inputs}{message}")


def _propose_request(task_type: TaskType) -> str:
    if task_type not in _PROPOSE_INSTRUCTIONS:
        raise ValueError(f"only code tasks are proposed, got {task_type}")
    return (f"Propose a new, different and challenging task: {_PROPOSE_INSTRUCTIONS[task_type]}."
            f"\n\n{_propose_format(task_type)}")


def propose_example(task_type: TaskType, *, scaffold: bool = False) -> str:
    r"""The worked proposal of ``task_type``: the whole assistant turn, in the format.

    With ``scaffold`` it starts with the scaffold's prefill (:func:`propose_prefill`).

    >>> propose_example(TaskType.CODE_O).startswith("<think>")
    True
    >>> propose_example(TaskType.CODE_F, scaffold=True).startswith(propose_prefill(True))
    True
    """
    count = len(_EXAMPLE_INPUTS) if task_type is TaskType.CODE_F else 1
    blocks = [_fence(_EXAMPLE_PROGRAM, "python"),
              *(_fence(i, "input") for i in _EXAMPLE_INPUTS[:count])]
    if task_type is TaskType.CODE_F:
        blocks.append(_fence("Doubles the positive numbers and drops the rest.", "message"))
    think = PROPOSE_SCAFFOLD_THINK if scaffold else "Double the positive numbers of a list."
    joined = "\n".join(blocks)
    return f"<think>{think}</think><answer>\n{joined}\n</answer>"


def propose_prefill(scaffold: bool) -> str:
    r"""The opened proposer turn: ``<think>``, or with ``scaffold`` up to the program block.

    >>> propose_prefill(False)
    '<think>'
    >>> propose_prefill(True).endswith("<answer>\n```python\n")
    True
    """
    if not scaffold:
        return PROPOSE_PREFILL
    return f"<think>{PROPOSE_SCAFFOLD_THINK}</think><answer>\n```python\n"


def propose_prompt(task_type: TaskType, references: Sequence[CodeTask]) -> str:
    """The proposer's user prompt: reference tasks, then the request and its answer format.

    The request comes last so that the model answers it rather than continuing the list.

    Args:
        task_type: the code task type to propose.
        references: earlier valid tasks shown as examples (may be empty).

    Returns:
        The prompt text.
    """
    parts = []
    for number, reference in enumerate(references, start=1):
        pairs = "\n".join(f"f({i}) == {o}" for i, o in zip(reference.inputs, reference.outputs,
                                                           strict=True))
        parts.append(f"Reference {number}:\n{_fence(reference.program, 'python')}\n{pairs}")
    parts.append(_propose_request(task_type))
    return "\n\n".join(parts)


def propose_messages(task_type: TaskType, references: Sequence[CodeTask], *,
                     scaffold: bool = False) -> list[Message]:
    """Chat messages for the proposer: format, one worked proposal, request, opened turn.

    The turn is opened with :func:`propose_prefill` (``<think>``, or the scaffold).

    >>> [m["role"] for m in propose_messages(TaskType.CODE_I, [])]
    ['system', 'user', 'assistant', 'user', 'assistant']
    """
    return [
        {"role": "system", "content": PROPOSE_SYSTEM},
        {"role": "user", "content": _propose_request(task_type)},
        {"role": "assistant", "content": propose_example(task_type, scaffold=scaffold)},
        {"role": "user", "content": propose_prompt(task_type, references)},
        {"role": "assistant", "content": propose_prefill(scaffold)},
    ]


def propose_response(messages: Sequence[Message], text: str) -> str:
    """The proposer's whole turn: the prefill the backend continued, then the generated ``text``.

    >>> propose_response(propose_messages(TaskType.CODE_O, []), "x</think><answer>")
    '<think>x</think><answer>'
    """
    return assistant_prefill(messages) + text
