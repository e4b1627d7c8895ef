"""One training run of an arm: a CRSP trainer (built by ``build_trainer``) or TRL's
GRPOTrainer, on the same scheduled prompts, scored on the held-out tasks as it goes."""

from __future__ import annotations

import contextlib
import random
import sys
import tempfile
import time

from benchmarks.learning.arm_settings import arm_settings, sampling_seed
from benchmarks.learning.heldout import HeldOut
from benchmarks.trl_grpo import grpo_config
from crsp_ops.crsp.rewards.formulas import format_rule_reward
from crsp_ops.crsp.rewards.solve import RewardSet
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
from crsp_ops.crsp.tasks import check_solutions, solve_messages, solve_response
from crsp_ops.crsp.tasks.starter_tasks import starter_tasks
from crsp_ops.crsp.tasks.task_types import MathTask, TaskType
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.models.loading import load_causal_lm


def training_schedule(train_tasks: list, args, *, spare: int = 0) -> list:
    """The math tasks every arm trains on, in order: ``--tasks-per-step`` per step.

    ``spare`` more tasks follow the steps' own (dynamic sampling's refills draw them), so the
    first ``steps * tasks_per_step`` are the same for every arm.
    """
    order = random.Random(args.schedule_seed).sample(train_tasks, len(train_tasks))
    needed = args.steps * args.tasks_per_step + spare
    return (order * (needed // len(order) + 1))[:needed]


class ScheduledTasks(TaskBuffers):
    """Task buffers whose draws of the schedule's type follow it (the prompts TRL's arm gets).

    Every other type (the self-play arm's code_o) is drawn as the trainer draws it.
    """

    def __init__(self, seeds, schedule: list, *, capacity: int) -> None:
        super().__init__(seeds, capacity=capacity)
        self.schedule = list(schedule)
        self.scheduled_type = schedule[0].task_type

    def sample(self, task_type, count, rng):
        if task_type is not self.scheduled_type:
            return super().sample(task_type, count, rng)
        if count > len(self.schedule):
            raise RuntimeError(f"the schedule has {len(self.schedule)} math tasks left, the "
                               f"trainer asked for {count}")
        drawn, self.schedule = self.schedule[:count], self.schedule[count:]
        return drawn


def spent(samples: int, args) -> bool:
    """Whether ``--sample-budget`` (if set) is reached by ``samples`` generated solve samples."""
    return args.sample_budget is not None and samples >= args.sample_budget


def run_crsp(args, arm: str, train_tasks, heldout: HeldOut, base: dict,
             rewards: RewardSet | None) -> dict:
    """A CRSP trainer on the edge tasks, evaluated every ``--eval-every`` steps.

    ``base`` is the shared step-0 evaluation (every arm starts from the same weights). The
    trainer's ``crsp.seed`` is the sampling seed: the tasks come from the schedule.
    """
    settings = arm_settings(args, arm, sampling_seed(args))
    model, tokenizer = load_causal_lm(args.model)
    evaluations, step_times, flat_shares, no_signal, generated, lags = [], [], [], [], [], []
    served: dict = {}
    seeds = {train_tasks[0].task_type: list(train_tasks)}
    if arm == "selfplay":
        seeds[TaskType.CODE_O] = list(starter_tasks(TaskType.CODE_O))
    train = settings.train
    spare = (args.steps * args.tasks_per_step * train.dynamic_sampling_max_rounds
             if train.dynamic_sampling else 0)
    buffers = ScheduledTasks(seeds, training_schedule(train_tasks, args, spare=spare),
                             capacity=len(train_tasks))
    with tempfile.TemporaryDirectory() as out:
        trainer = build_trainer(settings, model, tokenizer, out_dir=out,
            tasks=train_tasks if rewards else (), rewards=rewards, buffers=buffers)
        seeds_type = train_tasks[0].task_type
        try:
            evaluations.append(base)
            while trainer.step < args.steps and not spent(trainer.solve_samples, args):
                metrics, _ = trainer.train_step()
                trainer.step += 1
                step_times.append(metrics["perf/step_time_s"])
                flat_shares.append(round(metrics["solve/flat_task_share"], 3))
                no_signal.append(round(metrics["solve/flat_reward_share"], 3))
                generated.append(trainer.solve_samples)
                lags.append(metrics.get("generation/policy_lag", 0.0))
                print(f"# {arm} step {trainer.step}: solve_rate "
                      f"{metrics.get(f'solve_rate/{seeds_type.value}', 0):.3f} "
                      f"format {metrics.get('format_ok/solve', 0):.2f} "
                      f"flat tasks {flat_shares[-1]:.2f} (rewards alike {no_signal[-1]:.2f}) "
                      f"generated {trainer.solve_samples} "
                      f"{metrics['perf/step_time_s']:.0f} s", file=sys.stderr, flush=True)
                if (trainer.step % args.eval_every == 0 or trainer.step == args.steps
                        or spent(trainer.solve_samples, args)):
                    evaluations.append(heldout.score(trainer.unwrapped_model, tokenizer,
                                                     trainer.step, trainer.solve_samples))
            served = dict(getattr(trainer.generation, "stats", {}))
        finally:
            trainer.close()
    return {"evaluations": evaluations, "step_s": step_times, "flat_task_share": flat_shares,
            "flat_reward_share": no_signal, "generated_samples": generated, "policy_lag": lags,
            **({"server": served} if served else {})}


def run_grpo(args, train_tasks, heldout: HeldOut, base: dict, rewards: RewardSet | None,
             executor) -> dict:
    """TRL's GRPOTrainer on the same prompts, reward, sizes and evaluation points.

    With ``--dataset`` it gets the rows (conversational prompts, every column) and the very
    reward functions of ``--reward``, weighted as the CRSP arm weighs them.
    """
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    settings = arm_settings(args, "grpo")
    model, tokenizer = load_causal_lm(args.model)
    rows, reward_funcs, weights = grpo_rows_and_rewards(args, train_tasks, tokenizer, rewards,
                                                        executor)
    evaluations, marks = [], []

    class Evaluate(TrainerCallback):
        def on_step_begin(self, *_, **__):
            marks.append(time.perf_counter())

        def on_step_end(self, _args, state, _control, **__):
            marks[-1] = time.perf_counter() - marks[-1]
            step = state.global_step
            print(f"# grpo step {step}: {marks[-1]:.0f} s", file=sys.stderr, flush=True)
            if step % args.eval_every == 0 or step == args.steps:
                evaluations.append(heldout.score(model, tokenizer, step,
                                                 step * args.tasks_per_step * args.samples))

    sequences = args.tasks_per_step * args.samples
    micro = min(settings.train.micro_batch_size, sequences)
    while sequences % micro:
        micro -= 1
    evaluations.append(base)
    with tempfile.TemporaryDirectory() as out:
        # fp32 without checkpointing (grpo_config's defaults), as the CRSP arms train: TRL's
        # defaults (bf16 autocast, gradient checkpointing) patch the model's forward, so the
        # held-out evaluation after a step would run in bf16 and differ from the shared one.
        config = grpo_config(
            out, samples=args.samples, sequences=sequences, micro=micro,
            max_new_tokens=args.max_new_tokens, temperature=args.temperature,
            seed=sampling_seed(args), learning_rate=args.learning_rate,
            weight_decay=settings.train.weight_decay, max_grad_norm=settings.train.max_grad_norm,
            max_steps=args.steps, reward_weights=weights)
        trainer = GRPOTrainer(model=model, reward_funcs=reward_funcs, args=config,
                              processing_class=tokenizer, callbacks=[Evaluate()],
                              train_dataset=Dataset.from_list(rows))
        with contextlib.redirect_stdout(sys.stderr):
            trainer.train()
    return {"evaluations": evaluations, "step_s": marks}


def grpo_rows_and_rewards(args, train_tasks, tokenizer, rewards: RewardSet | None,
                          executor) -> tuple[list[dict], list, list[float] | None]:
    """GRPO's scheduled rows, reward functions and their weights (``None``: TRL's equal ones).

    With ``rewards`` (``--dataset``): the rows' conversational prompts and columns, and the
    ``--reward`` functions as weighted; else the rendered edge-math prompts and the format rule.
    """
    by_question = {getattr(task, "question", ""): task for task in train_tasks}

    def format_rule(prompts, completions, question, **_):
        tasks = [by_question[q] for q in question]
        responses = [solve_response(solve_messages(task), text)
                     for task, text in zip(tasks, completions, strict=True)]
        checks = check_solutions(tasks, responses, executor)
        return [format_rule_reward(well_formed=c.well_formed, passed=c.correct, role_reward=1.0)
                for c in checks]

    if rewards is not None:
        rows = [{"prompt": task.prompt, **task.columns}
                for task in training_schedule(train_tasks, args)]
        reward_funcs = [function.fn for function in rewards.functions]
        weights = [function.weight for function in rewards.functions]
    else:
        rows = [{"prompt": prompt_text(tokenizer, task), "question": task.question}
                for task in training_schedule(train_tasks, args)]
        reward_funcs, weights = [format_rule], None
    return rows, reward_funcs, weights


def prompt_text(tokenizer, task: MathTask) -> str:
    """The solve conversation rendered as the in-process backend renders it (prefill open).

    TRL renders a conversational prompt with a generation prompt even after an assistant
    prefill, so GRPO gets the rendered text, checked to tokenize to the same ids.
    """
    messages = solve_messages(task)
    text = tokenizer.apply_chat_template(messages, tokenize=False, continue_final_message=True)
    expected = tokenizer.apply_chat_template(messages, tokenize=True, continue_final_message=True)
    expected = expected["input_ids"] if hasattr(expected, "keys") else expected
    if tokenizer(text)["input_ids"] != list(expected):
        raise ValueError("the rendered solve prompt does not re-tokenize to the template's ids")
    return text
