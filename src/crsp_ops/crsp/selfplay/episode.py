"""One self-play episode: propose → validate → solve (n samples) → critique → rewards.

Generation goes through a ``GenerationBackend`` and every program runs in the sandbox; the
output is one scored ``RoleSample`` per trained response, plus episode counters.

Design: docs/design/trainer.md#episode.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from crsp_ops.crsp.executor import ExecutionStatus, SandboxExecutor
from crsp_ops.crsp.rewards.alpha_schedule import Alphas
from crsp_ops.crsp.rewards.formulas import critique_reward, format_rule_reward, learnability_reward
from crsp_ops.crsp.rewards.functions import RewardState
from crsp_ops.crsp.rewards.solve import (
    RewardSet,
    ScoredBatch,
    at_alphas,
    builtin_solve_rewards,
    reward_call,
)
from crsp_ops.crsp.selfplay.critique import parse_critique, parse_grade
from crsp_ops.crsp.selfplay.critique_prompts import (
    creativity_grading_messages,
    critique_messages,
    critique_response,
    grading_response,
)
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks import (
    propose_messages,
    propose_response,
    solve_messages,
    solve_response,
    task_statement,
    validate_proposals,
)
from crsp_ops.crsp.tasks.task_types import CODE_TASK_TYPES, CodeTask, Task, TaskType, task_family
from crsp_ops.inference.backend import GenerationBackend, Message
from crsp_ops.inference.completions import Completion, SamplingParams


@dataclass(frozen=True)
class EpisodeOptions:
    """How much one episode generates and how it is rewarded (values come from the config)."""

    problem_types: tuple[TaskType, ...]
    proposals: int  # code tasks proposed per episode
    references: int  # reference tasks shown to the proposer
    tasks_per_type: int  # buffer tasks solved per problem type
    solver_samples: int  # n
    critiques_per_task: int
    max_new_tokens: Mapping[str, int]  # per role: propose, solve, critique
    temperature: float
    min_inputs_code_f: int
    length_max_length: int
    length_penalty_threshold: int
    creativity_enabled: bool
    creativity_dimensions: tuple[str, ...]
    propose_scaffold: bool = False  # proposer turn prefilled up to its program block
    top_p: float = 1.0  # nucleus mass of the roles' sampling; 1.0 = off
    top_k: int = 0  # 0 = off
    min_p: float = 0.0  # 0.0 = off
    repetition_penalty: float = 1.0  # 1.0 = off


@dataclass(frozen=True)
class RoleSample:
    """One generated response of one role, scored and ready to become a rollout."""

    role: str  # "propose" | "solve" | "critique"
    task_type: str  # "code_i" | "code_o" | "code_f" | "math"
    example_id: str  # unique within the step, e.g. "solve/3/1" (task 3, sample 1)
    messages: tuple[Message, ...]  # the prompt the response answers
    completion: Completion
    reward: float  # after the format rule
    role_reward: float  # before the format rule
    well_formed: bool
    passed: bool
    info: Mapping[str, Any] = field(default_factory=dict)  # what the sample table shows


@dataclass(frozen=True)
class Episode:
    """Everything one step generated and learned about its tasks."""

    samples: tuple[RoleSample, ...]
    new_tasks: tuple[CodeTask, ...]  # valid proposals, to be added to the buffers
    counters: Mapping[str, float]  # executor failures, grader format failures, ...


def _sampling(options: EpisodeOptions, role: str, seed: int) -> SamplingParams:
    return SamplingParams(max_new_tokens=options.max_new_tokens[role],
                          temperature=options.temperature, top_p=options.top_p, seed=seed,
                          top_k=options.top_k, min_p=options.min_p,
                          repetition_penalty=options.repetition_penalty)


_FAILED_STATUSES = {status.value for status in ExecutionStatus} - {ExecutionStatus.OK.value}


def _is_executor_failure(detail: str) -> bool:
    """True when a check's detail reports a sandbox run that did not end OK."""
    return detail.split(":", 1)[0] in _FAILED_STATUSES


def proposal_types(options: EpisodeOptions, step: int) -> list[TaskType]:
    """The code types proposed at ``step``, in turn over the configured code types.

    >>> opts = EpisodeOptions((TaskType.CODE_I, TaskType.MATH, TaskType.CODE_F), 3, 0, 0, 1,
    ...     0, {}, 1.0, 2, 1, 1, False, ())
    >>> [t.value for t in proposal_types(opts, 1)]
    ['code_f', 'code_i', 'code_f']
    """
    code = [t for t in options.problem_types if t in CODE_TASK_TYPES]
    if not code:
        return []
    return [code[(step * options.proposals + i) % len(code)] for i in range(options.proposals)]


def propose(backend: GenerationBackend, executor: SandboxExecutor, buffers: TaskBuffers,
            options: EpisodeOptions, step: int, rng: random.Random, seed: int):
    """Generate and sandbox-validate proposals; return (messages, completions, checks)."""
    types = proposal_types(options, step)
    conversations = [propose_messages(t, [r for r in buffers.sample(t, options.references, rng)
                                          if isinstance(r, CodeTask)],
                                      scaffold=options.propose_scaffold) for t in types]
    if not conversations:
        return [], [], [], types
    completions = backend.generate(conversations, _sampling(options, "propose", seed))
    responses = [propose_response(m, c.text) for m, c in zip(conversations, completions,
                                                             strict=True)]
    checks = validate_proposals(responses, types, executor,
                                min_inputs_code_f=options.min_inputs_code_f)
    return conversations, completions, checks, types


def draw_tasks(buffers: TaskBuffers, options: EpisodeOptions, rng: random.Random) -> list[Task]:
    """``tasks_per_type`` buffer tasks of every configured problem type."""
    return [task for task_type in options.problem_types
            for task in buffers.draw(task_type, options.tasks_per_type, rng)]


def builtin_rewards(executor: SandboxExecutor, options: EpisodeOptions,
                    alphas: Alphas) -> RewardSet:
    """CRSP's own solve reward at ``alphas``, with the options' length settings."""
    return at_alphas(builtin_solve_rewards(
        executor, length_max_length=options.length_max_length,
        length_penalty_threshold=options.length_penalty_threshold), alphas)


def solve(backend: GenerationBackend, tasks: Sequence[Task], options: EpisodeOptions,
          rewards: RewardSet, state: RewardState, seed: int
          ) -> tuple[list[RoleSample], ScoredBatch | None]:
    """Sample n responses per task and score them with ``rewards``; return the solve samples.

    A built-in task and a dataset row travel the same road: the conversation is
    ``solve_messages(task)``, the reward functions get TRL's arguments (``reward_call``).
    """
    n = options.solver_samples
    flat_tasks = [task for task in tasks for _ in range(n)]
    if not flat_tasks:
        return [], None
    conversations = [solve_messages(task) for task in flat_tasks]
    completions = backend.generate(conversations, _sampling(options, "solve", seed))
    scored = rewards.score(reward_call(flat_tasks, completions, state))
    samples = []
    for index, (task, messages, completion) in enumerate(
            zip(flat_tasks, conversations, completions, strict=True)):
        extra = {name: values[index] for name, values in scored.extra.items()}
        samples.append(RoleSample(
            "solve", task.task_type.value, f"solve/{index // n}/{index % n}", tuple(messages),
            completion, scored.totals[index], scored.role_rewards[index],
            scored.well_formed[index], scored.passed[index],
            {"task_index": index // n, "family": task_family(task),
             "rewards": scored.sample_values(index), **extra}))
    return samples, scored


def proposer_samples(conversations, completions, checks, types, solve_samples,
                     options: EpisodeOptions) -> list[RoleSample]:
    """Score proposals by learnability over their n solver samples (tasks 0..k-1 of ``solve``)."""
    rates: dict[int, int] = {}
    for sample in solve_samples:
        rates.setdefault(sample.info["task_index"], 0)
        rates[sample.info["task_index"]] += int(sample.passed)
    samples, solved_index = [], 0
    for index, (messages, completion, check, task_type) in enumerate(
            zip(conversations, completions, checks, types, strict=True)):
        role = 0.0
        if check.valid:
            role = learnability_reward(rates.get(solved_index, 0), options.solver_samples)
            solved_index += 1
        reward = format_rule_reward(well_formed=check.well_formed, passed=check.valid,
                                    role_reward=role)
        samples.append(RoleSample("propose", task_type.value, f"propose/{index}",
                                  tuple(messages), completion, reward, role, check.well_formed,
                                  check.valid, {"detail": check.detail}))
    return samples


def creativity_scores(backend: GenerationBackend, thinking: Sequence[str | None],
                      options: EpisodeOptions) -> tuple[list[float], int]:
    """The policy's greedy effort grade of each ``<think>`` text (0 when there is none).

    Returns:
        ``(scores, format_failures)``: per-dimension mean when the grader gives every
        configured dimension, else its overall grade; unparseable replies get the neutral
        grade and count as format failures.
    """
    asked = [i for i, text in enumerate(thinking) if text]
    scores = [0.0] * len(thinking)
    if not asked:
        return scores, 0
    params = SamplingParams(max_new_tokens=options.max_new_tokens["critique"], temperature=0.0,
                            top_p=1.0)
    conversations = [creativity_grading_messages(thinking[i]) for i in asked]
    replies = backend.generate(conversations, params)
    failures = 0
    for index, messages, reply in zip(asked, conversations, replies, strict=True):
        evaluation = parse_grade(grading_response(messages, reply.text))
        failures += int(not evaluation.format_ok)
        dims = [evaluation.dimensions[d] for d in options.creativity_dimensions
                if d in evaluation.dimensions]
        full = options.creativity_dimensions and len(dims) == len(options.creativity_dimensions)
        scores[index] = sum(dims) / len(dims) if full else evaluation.grade
    return scores, failures


def critique(backend: GenerationBackend, tasks: Sequence[Task], solve_samples: Sequence[RoleSample],
             options: EpisodeOptions, alphas: Alphas, seed: int) -> tuple[list[RoleSample], int]:
    """Critique the first ``critiques_per_task`` solutions of each task; score them."""
    chosen = [s for s in solve_samples
              if int(s.example_id.rsplit("/", 1)[1]) < options.critiques_per_task]
    if not chosen:
        return [], 0
    conversations = [critique_messages(task_statement(tasks[s.info["task_index"]]),
                                       solve_response(s.messages, s.completion.text))
                     for s in chosen]
    completions = backend.generate(conversations, _sampling(options, "critique", seed))
    parsed = [parse_critique(critique_response(m, c.text))
              for m, c in zip(conversations, completions, strict=True)]
    creativity, failures = [0.0] * len(parsed), 0
    if options.creativity_enabled:
        creativity, failures = creativity_scores(backend, [p.thinking for p in parsed], options)
    samples = []
    for solution, messages, completion, out, effort in zip(
            chosen, conversations, completions, parsed, creativity, strict=True):
        agrees = out.verdict is not None and out.verdict == solution.passed
        role = (critique_reward(float(agrees), effort, alphas.alpha_c)
                if options.creativity_enabled else float(agrees))
        reward = format_rule_reward(well_formed=out.well_formed, passed=agrees, role_reward=role)
        samples.append(RoleSample(
            "critique", solution.task_type, f"critique/{solution.example_id}", tuple(messages),
            completion, reward, role, out.well_formed, agrees,
            {"solution_id": solution.example_id, "verdict": out.verdict, "creativity": effort,
             "agreement": float(agrees)}))
    return samples, failures


def run_episode(backend: GenerationBackend, executor: SandboxExecutor, buffers: TaskBuffers,
                options: EpisodeOptions, *, rewards: RewardSet, state: RewardState, step: int,
                alphas: Alphas, rng: random.Random, seed: int) -> Episode:
    """Generate and score one step of self-play (design: docs/design/trainer.md#episode).

    Args:
        backend: generation for every role (and the creativity grader).
        executor: the sandbox.
        buffers: where reference and solve tasks are drawn from (a dataset's advances its
            epoch position; nothing is added here).
        options: sizes, budgets and reward settings.
        rewards: the solve step's reward functions (``solve_rewards``).
        state: what the reward functions see as ``trainer_state``.
        step: training step (decides which code types are proposed).
        alphas: the schedule's weights at this step.
        rng: draws tasks.
        seed: base sampling seed of this step (each role offsets it).

    Returns:
        The scored samples, the valid new tasks and counters.
    """
    conversations, completions, checks, types = propose(
        backend, executor, buffers, options, step, rng, seed)
    new_tasks = [check.task for check in checks if check.valid]
    tasks = [*new_tasks, *draw_tasks(buffers, options, rng)]
    solve_samples, scored = solve(backend, tasks, options, at_alphas(rewards, alphas),
                                  state, seed + 1)
    propose_samples = proposer_samples(conversations, completions, checks, types, solve_samples,
                                       options)
    critique_samples, grader_failures = critique(backend, tasks, solve_samples, options, alphas,
                                                 seed + 2)
    failures = sum(_is_executor_failure(c.detail) for c in checks if c.well_formed)
    failures += sum(_is_executor_failure(str(s.info.get("detail", ""))) for s in solve_samples)
    counters = {
        **{f"reward_seconds/{name}": seconds
           for name, seconds in (scored.seconds.items() if scored else ())},
        **{f"reward_logged/{name}": value
           for name, value in (scored.logged.items() if scored else ())},
        "executor/failures": float(failures),
        "proposals/count": float(len(checks)),
        "proposals/valid": float(len(new_tasks)),
        "critique/grader_format_failures": float(grader_failures),
        "tasks/solved_per_step": float(len(tasks)),
    }
    return Episode(tuple(propose_samples + solve_samples + critique_samples), tuple(new_tasks),
                   counters)
