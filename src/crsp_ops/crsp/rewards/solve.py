"""How a solve sample is scored: a ``RewardSet`` of reward functions and the rule combining them.

``rule="sum"`` for a user's functions (as TRL sums them); ``rule="format_rule"`` for CRSP's own
solve reward (format, correctness, length under the alpha schedule).

Design: docs/design/trainer.md#solve.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from crsp_ops.crsp.executor import SandboxExecutor
from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.formulas import format_rule_reward, length_reward
from crsp_ops.crsp.rewards.functions import (
    RewardCall,
    RewardError,
    RewardFunction,
    RewardState,
    call_reward,
    weighted_total,
)
from crsp_ops.crsp.tasks import check_solutions, solve_messages, solve_response
from crsp_ops.crsp.tasks.answers import math_answer_correct, solver_answer, usable_answer
from crsp_ops.crsp.tasks.task_types import MathTask, PromptTask, Task
from crsp_ops.inference.completions import Completion
from crsp_ops.inference.hf_chat import assistant_prefill

FORMAT, CORRECTNESS, LENGTH = "format", "correctness", "length"


@dataclass(frozen=True)
class ScoredBatch:
    """The reward functions' verdicts on one batch of samples (lists in sample order)."""

    values: Mapping[str, list[float | None]]  # per function
    totals: list[float]  # the sequence reward each sample is trained on
    role_rewards: list[float]  # before the format rule (equal to totals under "sum")
    well_formed: list[bool]
    passed: list[bool]
    seconds: Mapping[str, float]  # per function, for this batch
    extra: Mapping[str, list[Any]]  # log_extra columns (answer, detail, ...)
    logged: Mapping[str, float]  # log_metric values

    def sample_values(self, index: int) -> dict[str, float | None]:
        """Every function's value for sample ``index``."""
        return {name: values[index] for name, values in self.values.items()}


def reward_prompt(task: Task) -> Any:
    """What a reward function gets as the prompt: a row's own, else the solve conversation."""
    return task.prompt if isinstance(task, PromptTask) else solve_messages(task)


def reward_completion(task: Task, text: str) -> Any:
    """TRL's completion form: the text, or an assistant message for a conversational prompt."""
    if isinstance(task, PromptTask) and isinstance(task.prompt, str):
        return text
    return [{"role": "assistant", "content": text}]


def reward_call(tasks: Sequence[Task], completions: Sequence[Completion],
                state: RewardState) -> RewardCall:
    """The keyword arguments TRL would pass for these samples (columns from the tasks).

    A dataset row's columns are its own; a built-in task's one column is ``task``.
    """
    columns: dict[str, list[Any]] = {}
    for index, task in enumerate(tasks):
        own = task.columns if isinstance(task, PromptTask) else {"task": task}
        for name, value in own.items():
            columns.setdefault(name, [None] * len(tasks))[index] = value
    return RewardCall(
        prompts=[reward_prompt(task) for task in tasks],
        completions=[reward_completion(task, c.text) for task, c in
                     zip(tasks, completions, strict=True)],
        completion_ids=[list(c.token_ids) for c in completions], columns=columns, state=state)


@dataclass(frozen=True)
class RewardSet:
    """Reward functions, how they combine (``rule``) and what counts as success."""

    functions: tuple[RewardFunction, ...]
    rule: str = "sum"  # "sum" | "format_rule"
    success_reward: str | None = None  # None: the weighted total
    success_threshold: float = 1.0
    timeout_s: float = 0.0  # per function and batch; 0: no limit

    def __post_init__(self) -> None:
        names = [function.name for function in self.functions]
        if not names:
            raise RewardError("no reward function: give at least one --reward")
        if len(set(names)) != len(names):
            raise RewardError(f"two reward functions share a name: {names}; rename one (the "
                              "metrics are logged per name)")
        if self.rule not in ("sum", "format_rule"):
            raise ValueError(f"unknown rule {self.rule!r}; use 'sum' or 'format_rule'")
        needed = {FORMAT, CORRECTNESS} if self.rule == "format_rule" else set()
        if self.success_reward is not None:
            needed.add(self.success_reward)
        if needed - set(names):
            raise RewardError(f"success reward {sorted(needed - set(names))} is not among the "
                              f"reward functions {names}")

    @property
    def names(self) -> list[str]:
        """The functions' names, in order (the metrics' names)."""
        return [function.name for function in self.functions]

    def with_weights(self, weights: Mapping[str, float]) -> RewardSet:
        """The same set with the named functions' weights replaced."""
        return replace(self, functions=tuple(
            replace(f, weight=weights.get(f.name, f.weight)) for f in self.functions))

    def score(self, call: RewardCall) -> ScoredBatch:
        """Run every function on the batch and combine them by the rule."""
        values, seconds = {}, {}
        for function in self.functions:
            values[function.name], seconds[function.name] = call_reward(
                function, call, timeout_s=self.timeout_s)
        weights = {f.name: f.weight for f in self.functions}
        if self.rule == "format_rule":
            formed = [value == 1.0 for value in values[FORMAT]]
            roles = weighted_total({n: v for n, v in values.items() if n != FORMAT}, weights)
        else:
            formed = [True] * len(call)
            roles = weighted_total(values, weights)
        name = self.success_reward or (CORRECTNESS if self.rule == "format_rule" else None)
        success = values[name] if name else roles
        passed = [value is not None and value >= self.success_threshold for value in success]
        totals = roles if self.rule == "sum" else [
            format_rule_reward(well_formed=f, passed=p, role_reward=r)
            for f, p, r in zip(formed, passed, roles, strict=True)]
        return ScoredBatch(values, totals, roles, formed, passed, seconds, dict(call.extra),
                           dict(call.logged))


def reward_means(scored: Sequence[Mapping[str, float | None]]) -> dict[str, tuple[float, float]]:
    """Mean and population std of each function over the samples it applied to.

    >>> reward_means([{"a": 1.0, "b": None}, {"a": 0.0, "b": 0.5}])
    {'a': (0.5, 0.5), 'b': (0.5, 0.0)}
    """
    names = list(dict.fromkeys(name for row in scored for name in row))
    out = {}
    for name in names:
        applied = [row[name] for row in scored if row.get(name) is not None]
        if applied:
            out[name] = (statistics.fmean(applied), statistics.pstdev(applied))
    return out


# ---- the built-in solve reward: three TRL-signature functions under the format rule ------

def _responses(prompts: Sequence[Any], completions: Sequence[Any]) -> list[str]:
    """The solver's whole turns: the prefill put back before each completion's text."""
    return [solve_response(prompt, completion[0]["content"])
            if isinstance(completion, list) else completion
            for prompt, completion in zip(prompts, completions, strict=True)]


def solve_format(prompts, completions, task, **_) -> list[float]:
    """1 for a well-formed solver response (``<think>`` and a usable ``<answer>``), else 0."""
    return [float(usable_answer(t, response) is not None)
            for t, response in zip(task, _responses(prompts, completions), strict=True)]


class SolveCorrectness:
    """1 for a correct answer, else 0: math graded, code run in the sandbox.

    Reports each sample's answer and the checker's detail through ``log_extra``.
    """

    def __init__(self, executor: SandboxExecutor) -> None:
        self.executor = executor

    def __call__(self, prompts, completions, task, log_extra=None, **_) -> list[float]:
        """TRL's reward signature; ``task`` is the built-in task column."""
        checks = check_solutions(list(task), _responses(prompts, completions), self.executor)
        if log_extra is not None:
            log_extra("answer", [check.answer for check in checks])
            log_extra("detail", [check.detail for check in checks])
        return [float(check.correct) for check in checks]


class SolveLength:
    """``formulas.length_reward`` of each completion's token count."""

    def __init__(self, max_length: int, penalty_threshold: int) -> None:
        self.max_length, self.penalty_threshold = max_length, penalty_threshold

    def __call__(self, completion_ids, **_) -> list[float]:
        """TRL's reward signature; only the token counts matter."""
        return [length_reward(len(ids), max_length=self.max_length,
                              penalty_threshold=self.penalty_threshold) for ids in completion_ids]


def builtin_solve_rewards(executor: SandboxExecutor, *, length_max_length: int,
                          length_penalty_threshold: int, timeout_s: float = 0.0) -> RewardSet:
    """CRSP's solve reward as a ``RewardSet`` (weights set per step by ``at_alphas``)."""
    return RewardSet((
        RewardFunction(FORMAT, solve_format, 0.0),
        RewardFunction(CORRECTNESS, SolveCorrectness(executor), 1.0),
        RewardFunction(LENGTH, SolveLength(length_max_length, length_penalty_threshold), 0.0),
    ), rule="format_rule", success_reward=CORRECTNESS, timeout_s=timeout_s)


def at_alphas(rewards: RewardSet, alphas: Alphas) -> RewardSet:
    """The set at one step: under the format rule, ``alpha_s`` weighs correctness vs length.

    A user's ``sum`` set keeps its own weights.
    """
    if rewards.rule != "format_rule":
        return rewards
    return rewards.with_weights({CORRECTNESS: alphas.alpha_s, LENGTH: 1.0 - alphas.alpha_s})


def answer_match(prompts, completions, answer, question=None, **_) -> list[float | None]:
    """The project's grader as a TRL reward: 1 when the completion's answer matches ``answer``.

    The answer is read from ``<answer>...</answer>`` when the completion has one, else the
    whole completion is graded (``evaluation.correctness`` with the ``question`` column when
    there is one: units, precision, refusals). Rows without an answer get ``None``.

    >>> answer_match(["2+2?"], ["<think>2+2</think><answer>4</answer>"], ["4"])
    [1.0]
    >>> answer_match(["2+2?"], [[{"role": "assistant", "content": "five"}]], ["4"])
    [0.0]
    """
    questions = question if question is not None else [""] * len(prompts)
    out: list[float | None] = []
    for prompt, completion, truth, asked in zip(prompts, completions, answer, questions,
                                                strict=True):
        if truth is None or str(truth).strip() == "":
            out.append(None)
            continue
        text = completion[0]["content"] if isinstance(completion, list) else completion
        if isinstance(prompt, list):
            text = assistant_prefill(prompt) + text
        predicted = solver_answer(text) or text.strip()
        task = MathTask(str(asked or ""), "", str(truth))
        out.append(float(math_answer_correct(predicted, task)))
    return out
