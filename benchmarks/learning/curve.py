"""Learning curves: CRSP's trainers beside TRL's GRPOTrainer on the same tasks; one JSON line.

    python -m benchmarks.learning curve --model /tmp/smollm2 --arms crsp grpo \
        --steps 16 --eval-every 8 --heldout 200 --out /tmp/curve

Every arm starts from the same ``--model`` and trains on the same edge math tasks in the same order
(``crsp.math_source=edge``: one- and two-operation word problems, ``data/edge_math.py``;
``training_schedule``: ``--tasks-per-step`` prompts per step, the CRSP trainer's draws replaced by
the schedule) with the same solve conversation (format, worked example, ``<think>`` prefill), the
same samples per prompt, prompts per step, completion budget, temperature and learning rate, so
every arm has generated the same number of solve samples at the same step. Every ``--eval-every``
steps and after the last, each arm answers the same ``--heldout`` tasks greedily; the project's
parser and grader score them (``crsp_ops.crsp.trainer.evaluation.score_heldout``). The step-0
evaluation is done once and shared: every arm starts from the same weights, and greedy decoding is
deterministic. ``--seed`` draws the tasks, the schedule and the held-out set; ``--sampling-seed``
(default ``--seed``) seeds each arm's sampling, so runs that differ only in it measure the spread
between training runs (``benchmarks.learning seeds`` takes the interval over them);
``--schedule-seed`` (default ``--seed``) re-orders the training prompts alone, so runs over several
add the spread a prompt order brings.

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
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.learning.arm_settings import ARMS, ROLLOUTS, arm_settings  # noqa: E402
from benchmarks.learning.arms import run_crsp, run_grpo  # noqa: E402
from benchmarks.learning.heldout import HeldOut, arm_summary, paired  # noqa: E402
from benchmarks.splits import LEARNING_CURVE  # noqa: E402
from benchmarks.vllm_cpu import VENV_PYTHON  # noqa: E402
from crsp_ops.atomic_io import atomic_write_json  # noqa: E402
from crsp_ops.config import ConfigError  # noqa: E402
from crsp_ops.crsp.rewards.functions import load_reward_function  # noqa: E402
from crsp_ops.crsp.rewards.solve import RewardSet, builtin_solve_rewards  # noqa: E402
from crsp_ops.crsp.tasks.edge import edge_math_tasks  # noqa: E402
from crsp_ops.crsp.trainer.learning_curve import save_curve_figure  # noqa: E402
from crsp_ops.crsp.trainer.options import make_executor  # noqa: E402
from crsp_ops.crsp.user_task import tasks_from_rows  # noqa: E402
from crsp_ops.data.prompt_dataset import load_prompt_rows  # noqa: E402
from crsp_ops.errors import DataError  # noqa: E402
from crsp_ops.models.loading import load_causal_lm  # noqa: E402


def arguments() -> argparse.ArgumentParser:
    """The command line's options (``parse_args`` checks how they combine)."""
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
                             "server 1, since its worker pins core 0 (benchmarks.server_rollouts)")
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
    return parser


def parse_args(argv=None) -> argparse.Namespace:
    parser = arguments()
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


def main(argv=None) -> int:
    """Run the curve; bad input (a missing reward, a malformed dataset) is one line, exit 2."""
    try:
        return run(parse_args(argv))
    except (ConfigError, DataError) as error:
        print(f"benchmarks.learning curve: {error}", file=sys.stderr)
        return 2


def run(args: argparse.Namespace) -> int:
    """Every arm from the same weights on the same prompts; the JSON line (and ``--out``)."""
    started = time.perf_counter()
    if args.trainer_threads:
        import torch
        torch.set_num_threads(args.trainer_threads)
    settings = arm_settings(args, "crsp")
    executor = make_executor(settings.crsp)
    train_tasks, heldout_tasks, rewards = curve_tasks(args, settings)
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
    report = curve_report(args, results, heldout_tasks, train_tasks, started)
    if args.out:
        save_outputs(args, report, results)
    print(json.dumps(report))
    return 0


def curve_tasks(args: argparse.Namespace, settings) -> tuple[list, list, RewardSet | None]:
    """Train and held-out tasks, and the rewards: the ``--dataset`` rows scored by the
    ``--reward`` functions, or the edge math tasks (``None``: CRSP's own solve reward)."""
    if args.dataset:
        task = tasks_from_rows(
            load_prompt_rows(args.dataset), load_prompt_rows(args.eval_dataset),
            [load_reward_function(spec, Path.cwd()) for spec in args.reward],
            settings.train, args.seed)
        return task.train, task.heldout[: args.heldout], task.rewards
    train_tasks, heldout_tasks = edge_math_tasks(settings.crsp)
    return train_tasks, heldout_tasks, None


def curve_report(args: argparse.Namespace, results: dict, heldout_tasks: list, train_tasks: list,
                 started: float) -> dict:
    """The JSON line: the options, each arm's curve summary, crsp - grpo at the last point."""
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
    return report


def save_outputs(args: argparse.Namespace, report: dict, results: dict) -> None:
    """``--out``'s learning_curve.json and the figure of every arm's curve."""
    args.out.mkdir(parents=True, exist_ok=True)
    atomic_write_json(args.out / "learning_curve.json", report)
    save_curve_figure({arm: [e["point"] for e in r["evaluations"]]
                       for arm, r in results.items()}, args.out / "learning_curve.png",
                      title=f"{Path(args.model).name}: "
                            f"{args.dataset.name if args.dataset else 'edge math'}"
                            f"{'' if args.dataset else f' (difficulty {args.difficulty})'}, "
                            f"{args.tasks_per_step} prompts x "
                            f"{args.samples} samples per step, lr {args.learning_rate}")
