"""Learning curves: CRSP's trainers beside TRL's GRPOTrainer on the same tasks; one JSON line.

    python benchmarks/learning_curve.py --model /tmp/smollm2 --arms crsp grpo \
        --steps 16 --eval-every 8 --heldout 200 --out /tmp/curve

Every arm starts from the same ``--model`` and trains on the same edge math tasks in the same
order (``crsp.math_source=edge``: one- and two-operation word problems, ``data/edge_math.py``;
``training_schedule``: ``--tasks-per-step`` prompts per step, the CRSP trainer's draws replaced
by the schedule) with the same solve conversation (format, worked example, ``<think>``
prefill), the same samples per prompt, prompts per step, completion budget, temperature and
learning rate, so every arm has generated the same number of solve samples at the same step.
Every ``--eval-every`` steps and after the last, each arm answers the same ``--heldout`` tasks
greedily; the project's parser and grader score them (``crsp.heldout.solve_checks``). The
step-0 evaluation is done once and shared: every arm starts from the same weights, and greedy
decoding is deterministic. ``--seed`` draws the tasks, the schedule and the held-out set;
``--sampling-seed`` (default ``--seed``) seeds each arm's sampling, so runs that differ only in
it measure the spread between training runs (``benchmarks/learning_curve_seeds.py`` takes the
interval over them); ``--schedule-seed`` (default ``--seed``) re-orders the training prompts
alone, so runs over several add the spread a prompt order brings.

Arms:
* ``crsp``: solve-only TR-RPG (the project's trainer, no proposals and no critiques), with
  its defaults: on ``--dataset`` those of a dataset run (``train.preset=auto``);
* ``trrpp``: solve-only TRR++ (the AZR baseline: whitened task-relative advantages, no KL);
* ``selfplay``: full self-play (code_o proposals, solves, critiques) plus the math solves;
  the x axis still counts solve samples, so its extra propose/critique generation is cost;
* ``grpo``: TRL's ``GRPOTrainer`` with the reward CRSP's solver gets (the format rule:
  1 for a correct answer, −0.5 for a well-formed wrong one, −1 for a malformed one; the length
  term is 1 at these lengths), TRL's default loss, ``beta=0``, in fp32 without gradient
  checkpointing like the CRSP arms (TRL's own defaults are bf16 autocast and checkpointing).

The JSON line holds, per arm, the curve (solve rate and well-formed share with 95% bootstrap
intervals, solve rate among well-formed answers), the paired after − before difference over
the same tasks with its interval, the mean step time, and ``crsp − grpo`` at the last point,
paired over tasks. ``--out`` gets ``learning_curve.png`` (all arms on one figure) and
``learning_curve.json``. Nothing is downloaded; run one at a time on the CPU.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parent))  # issue 45: benchmarks/splits.py

from splits import LEARNING_CURVE  # noqa: E402
from trl_grpo import grpo_config  # noqa: E402
from vllm_cpu import VENV_PYTHON, vllm_cpu_overrides  # noqa: E402

from crsp_ops.atomic_io import atomic_write_json  # noqa: E402
from crsp_ops.config import ConfigError, load_settings  # noqa: E402
from crsp_ops.crsp.policy.generation import InProcessGeneration  # noqa: E402
from crsp_ops.crsp.rewards.formulas import format_rule_reward  # noqa: E402
from crsp_ops.crsp.rewards.functions import RewardState, load_reward_function  # noqa: E402
from crsp_ops.crsp.rewards.solve import RewardSet, builtin_solve_rewards  # noqa: E402
from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers  # noqa: E402
from crsp_ops.crsp.tasks import check_solutions, solve_messages, solve_response  # noqa: E402
from crsp_ops.crsp.tasks.edge import edge_math_tasks  # noqa: E402
from crsp_ops.crsp.tasks.starter_tasks import starter_tasks  # noqa: E402
from crsp_ops.crsp.tasks.task_types import MathTask, TaskType  # noqa: E402
from crsp_ops.crsp.trainer.build import build_trainer  # noqa: E402
from crsp_ops.crsp.trainer.evaluation import score_heldout  # noqa: E402
from crsp_ops.crsp.trainer.learning_curve import (  # noqa: E402
    curve_point,
    paired_gain,
    save_curve_figure,
)
from crsp_ops.crsp.trainer.options import make_executor  # noqa: E402
from crsp_ops.crsp.user_task import tasks_from_rows  # noqa: E402
from crsp_ops.data.prompt_dataset import load_prompt_rows  # noqa: E402
from crsp_ops.errors import DataError, MissingInputError  # noqa: E402
from crsp_ops.models.loading import load_causal_lm  # noqa: E402
from crsp_ops.paths import project_root  # noqa: E402

ARMS = ("crsp", "trrpp", "selfplay", "grpo", "crsp_lora", "crsp_dynamic")
ARM_OVERRIDES = {
    "crsp": ["train.algorithm=trrpg"],
    "trrpp": ["train.algorithm=trrpp"],
    "selfplay": ["train.algorithm=trrpg", "crsp.problem_types=code_o,math",
                 "train.proposals_per_step=2", "train.critiques_per_task=1"],
    "grpo": [],
    # issue 42: solve-only TR-RPG with a rank-16 LoRA adapter on every linear projection; LoRA
    # usually wants ~10x full fine-tuning's learning rate (docs/scaling.md)
    "crsp_lora": ["train.algorithm=trrpg", "train.lora_rank=16", "train.lora_alpha=32",
                  "train.learning_rate=3e-4"],
    # issue 42: DAPO's dynamic sampling with the per-task baseline it is meant for (under the
    # task_type baseline a flat group still carries advantage); its refills draw further tasks
    # from the schedule and count as generated samples (compare with --sample-budget)
    "crsp_dynamic": ["train.algorithm=trrpg", "train.dynamic_sampling=y",
                     "train.advantage_baseline=task"],
}


ROLLOUTS = ("in_process", "vllm_cpu")


def rollout_overrides(args) -> list[str]:
    """The settings that send a CRSP arm's rollouts to vLLM's CPU server (``--rollouts``).

    The server is the trainer's own (``ServerGeneration``, started on the step-0 weights) and
    follows them in place after every step (``train.server_reload_interval=1``).
    """
    if args.rollouts == "in_process":
        return []
    return [*vllm_cpu_overrides(python=args.server_python), "train.server_reload_interval=1"]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=["crsp", "grpo"])
    parser.add_argument("--steps", type=int, default=16)
    parser.add_argument("--eval-every", type=int, default=8)
    parser.add_argument("--heldout", type=int, default=200)
    parser.add_argument("--tasks-per-step", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8, help="solve samples per prompt")
    parser.add_argument("--learning-rate", type=float, default=3e-5)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--difficulty", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=32, help="generation batch")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sampling-seed", type=int, default=None,
                        help="every arm's sampling seed (TRL's seed; the CRSP trainer's "
                             "crsp.seed, which seeds its episodes); default --seed. The task "
                             "schedule and held-out set stay those of --seed, so other values "
                             "measure how far an arm's result moves between training runs")
    parser.add_argument("--schedule-seed", type=int, default=None,
                        help="the order of the training prompts alone (default --seed; with "
                             "--split, the split's schedule seed or one of its sampling seeds): "
                             "runs over several schedules measure the spread a prompt order "
                             "adds")
    parser.add_argument("--sample-budget", type=int, default=None,
                        help="a CRSP arm also stops (and is evaluated) at the first step whose "
                             "generated solve samples, refills included, reach this many: "
                             "arms compared at equal generated samples")
    parser.add_argument("--out", type=Path, default=None, help="figure + JSON go here")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    # issue 44: the CRSP arms' rollouts from a real vLLM server (vllm-cpu), weights in place
    parser.add_argument("--rollouts", choices=ROLLOUTS, default="in_process",
                        help="where the CRSP arms' training samples come from: the model in "
                             "process, or vLLM's CPU server (make test-vllm-cpu) updated in "
                             "place after every step; held-out scoring stays in process")
    parser.add_argument("--server-python", default=VENV_PYTHON,
                        help="--rollouts vllm_cpu: the python of the vllm-cpu venv")
    parser.add_argument("--trainer-threads", type=int, default=0,
                        help="torch threads of the trainer (0: unchanged); beside a vLLM-CPU "
                             "server 1, since its worker pins core 0 (server_rollouts.py)")
    parser.add_argument("--dataset", type=Path, default=None,
                        help="train on this prompt dataset (train.dataset's format) instead of "
                             "edge math; needs --eval-dataset and --reward")
    parser.add_argument("--eval-dataset", type=Path, default=None,
                        help="held-out prompt rows (the first --heldout are scored)")
    parser.add_argument("--reward", action="append", default=[], metavar="SPEC[=WEIGHT]",
                        help="reward function(s) of --dataset: every arm, GRPO included, gets "
                             "the same functions")
    # issue 45: the dev / test task schedules and sampling seeds of benchmarks/splits.py
    parser.add_argument("--split", choices=tuple(LEARNING_CURVE), default=None,
                        help="take --seed (task schedule, held-out set) from the split; "
                             "--sampling-seed must then be one of the split's")
    args = parser.parse_args(argv)
    if args.dataset and not (args.eval_dataset and args.reward):
        parser.error("--dataset needs --eval-dataset and at least one --reward")
    if args.dataset:  # paths are the working directory's, as the reward files' are
        args.dataset, args.eval_dataset = args.dataset.resolve(), args.eval_dataset.resolve()
    if args.split:
        split = LEARNING_CURVE[args.split]
        if args.sampling_seed is not None and args.sampling_seed not in split.sampling_seeds:
            parser.error(f"--split {args.split}: --sampling-seed is one of "
                         f"{list(split.sampling_seeds)} (benchmarks/splits.py)")
        args.seed = split.schedule_seed
        own = (split.schedule_seed, *split.sampling_seeds)
        if args.schedule_seed is not None and args.schedule_seed not in own:
            parser.error(f"--split {args.split}: --schedule-seed is one of {list(own)} "
                         "(benchmarks/splits.py)")
    if args.schedule_seed is None:
        args.schedule_seed = args.seed
    return args


def sampling_seed(args) -> int:
    """The seed of the arms' sampling: ``--sampling-seed``, else ``--seed``."""
    return args.seed if args.sampling_seed is None else args.sampling_seed


def settings_root() -> Path:
    """The project whose configuration the arms start from: the working directory's crsp_ops
    project, else this checkout (a task folder of a user's is no project)."""
    try:
        return project_root()
    except MissingInputError:
        return project_root(Path(__file__).resolve().parent)


def arm_settings(args, arm: str, seed: int | None = None):
    """The effective settings of one arm: shared sizes first, then the arm's own keys.

    ``crsp.seed`` is ``seed`` (default ``--seed``, which draws the edge tasks).
    """
    shared = [
        "tracking.enabled=n", "crsp.problem_types=math", "crsp.math_source=edge",
        f"crsp.seed={args.seed if seed is None else seed}", f"crsp.heldout_math={args.heldout}",
        f"crsp.edge_difficulty={args.difficulty}", f"train.tasks_per_type={args.tasks_per_step}",
        f"train.solver_samples={args.samples}", "train.proposals_per_step=0",
        "train.critiques_per_task=0", f"train.learning_rate={args.learning_rate}",
        f"train.temperature={args.temperature}",
        f"train.max_new_tokens_solve={args.max_new_tokens}",
        f"train.steps={args.steps}", f"generation.batch_size={args.batch_size}",
        "train.eval_interval=0", "train.checkpoint_interval=1000000",
        *([f"train.dataset={args.dataset}"] if args.dataset else [])]  # train.preset=auto
    served = rollout_overrides(args) if arm != "grpo" else []
    return load_settings(settings_root(),
                         [*shared, *ARM_OVERRIDES[arm], *served, *args.overrides]).settings


class HeldOut:
    """The fixed held-out tasks, scored greedily; keeps each evaluation's per-task verdicts.

    With ``journal`` set, every evaluation is appended to that JSONL file as it ends, so a run
    cut short keeps the evaluations it finished.
    """

    def __init__(self, tasks: list, rewards: RewardSet, budget: int, batch_size: int,
                 journal: Path | None = None) -> None:
        self.tasks, self.rewards = tasks, rewards
        self.budget, self.batch_size = budget, batch_size
        self.journal, self.arm = journal, "base"

    def score(self, model, tokenizer, step: int, samples: int) -> dict:
        was_training = model.training
        model.eval()
        generation = InProcessGeneration(model, tokenizer, device="cpu",
                                         batch_size=self.batch_size)
        started = time.perf_counter()
        scores = score_heldout(generation.backend, self.tasks, self.rewards,
                               RewardState(step, step), max_new_tokens=self.budget)
        checks = scores.checks
        model.train(was_training)
        point = curve_point(step, samples, scores.metrics)
        low, high = point.solve_rate_ci
        print(f"#   step {step}: solve {point.solve_rate:.3f} [{low:.3f}, {high:.3f}] "
              f"well-formed {point.well_formed:.2f} ({time.perf_counter() - started:.0f} s)",
              file=sys.stderr, flush=True)
        correct = [c.correct for c in checks]
        if self.journal is not None:
            with self.journal.open("a", encoding="utf-8") as journal:
                journal.write(json.dumps({
                    "arm": self.arm, **point.to_row(), "correct_each": correct,
                    "well_formed_each": [c.well_formed for c in checks],
                    "reward_each": scores.rewards}) + "\n")
        return {"point": point, "correct": correct, "reward": scores.rewards}


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
    with tempfile.TemporaryDirectory() as out:
        trainer = build_trainer(settings, model, tokenizer, out_dir=out,
            tasks=train_tasks if rewards else (), rewards=rewards)
        seeds = {train_tasks[0].task_type: list(train_tasks)}
        if arm == "selfplay":
            seeds[TaskType.CODE_O] = list(starter_tasks(TaskType.CODE_O))
        train = settings.train
        spare = (args.steps * args.tasks_per_step * train.dynamic_sampling_max_rounds
                 if train.dynamic_sampling else 0)
        trainer.buffers = ScheduledTasks(seeds, training_schedule(train_tasks, args, spare=spare),
                                         capacity=len(train_tasks))
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


def paired(before: list[bool], after: list[bool]) -> dict:
    """Mean after − before over the same tasks, with a 95% paired bootstrap interval."""
    gain = paired_gain(before, after)
    return {"diff": round(gain.diff, 4), "ci95": [round(gain.low, 4), round(gain.high, 4)]}


def arm_summary(result: dict) -> dict:
    """Curve rows, the paired gain, the mean step time and (CRSP arms) flat tasks per step.

    A flat task's samples were all correct or all incorrect; ``flat_reward_share``: all
    scored alike, so the task gave a per-task baseline no signal (``step_metrics``).
    """
    first, last = result["evaluations"][0], result["evaluations"][-1]
    steps = result["step_s"]
    summary = {"curve": [e["point"].to_row() for e in result["evaluations"]],
               "after_minus_before": paired(first["correct"], last["correct"]),
               "reward_after_minus_before": paired(first["reward"], last["reward"]),
               "step_s_mean": round(float(np.mean(steps)), 1) if steps else None}
    for key in ("flat_task_share", "flat_reward_share", "generated_samples", "policy_lag",
                "server"):
        if key in result:
            summary[key] = result[key]
    return summary


def main(argv=None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    if args.trainer_threads:
        import torch
        torch.set_num_threads(args.trainer_threads)
    settings = arm_settings(args, "crsp")
    executor = make_executor(settings.crsp)
    rewards = None  # edge math: CRSP's own solve reward; --dataset: the --reward functions
    if args.dataset:
        task = tasks_from_rows(
            load_prompt_rows(args.dataset), load_prompt_rows(args.eval_dataset),
            [load_reward_function(spec, Path.cwd()) for spec in args.reward],
            settings.train, args.seed)
        train_tasks, heldout_tasks, rewards = task.train, task.heldout[: args.heldout], \
            task.rewards
    else:
        train_tasks, heldout_tasks = edge_math_tasks(settings.crsp)
    journal = None
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        journal = args.out / "evaluations.jsonl"
    scoring = rewards or builtin_solve_rewards(
        executor, length_max_length=settings.reward.length_max_length,
        length_penalty_threshold=settings.reward.length_penalty_threshold)
    heldout = HeldOut(heldout_tasks, scoring, args.max_new_tokens, args.batch_size, journal)
    results = {}
    try:
        model, tokenizer = load_causal_lm(args.model)
        base = heldout.score(model, tokenizer, 0, 0)  # greedy: the same for every arm
        del model
        for arm in args.arms:
            print(f"# arm {arm}", file=sys.stderr, flush=True)
            heldout.arm = arm
            arm_started = time.perf_counter()
            results[arm] = (run_grpo(args, train_tasks, heldout, base, rewards, executor)
                            if arm == "grpo" else
                            run_crsp(args, arm, train_tasks, heldout, base, rewards))
            results[arm]["wall_s"] = round(time.perf_counter() - arm_started, 1)
    finally:
        executor.close()
    report = {"benchmark": "learning_curve", "model": str(args.model),
              **{k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()
                 if k not in ("model", "out", "overrides")},
              "overrides": args.overrides, "heldout_tasks": len(heldout_tasks),
              "train_tasks": len(train_tasks),
              "arms": {arm: {**arm_summary(r), "wall_s": r["wall_s"]}
                       for arm, r in results.items()}}
    if "crsp" in results and "grpo" in results:
        crsp_last, grpo_last = (results[arm]["evaluations"][-1] for arm in ("crsp", "grpo"))
        report["crsp_minus_grpo_last"] = paired(grpo_last["correct"], crsp_last["correct"])
        report["crsp_minus_grpo_last_reward"] = paired(grpo_last["reward"], crsp_last["reward"])
    report["elapsed_s"] = round(time.perf_counter() - started, 1)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.out / "learning_curve.json", report)
        save_curve_figure({arm: [e["point"] for e in r["evaluations"]]
                           for arm, r in results.items()}, args.out / "learning_curve.png",
                          title=f"{Path(args.model).name}: "
                                f"{args.dataset.name if args.dataset else 'edge math'}"
                                f"{'' if args.dataset else f' (difficulty {args.difficulty})'}, "
                                f"{args.tasks_per_step} prompts x "
                                f"{args.samples} samples per step, lr {args.learning_rate}")
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    try:
        raise SystemExit(main())
    except (ConfigError, DataError) as error:  # bad input: one line, exit 2
        print(f"learning_curve.py: {error}", file=sys.stderr)
        raise SystemExit(2) from None
