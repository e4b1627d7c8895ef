"""What the reward plug-in road costs per training step beside the direct built-in code (JSON).

    python -m benchmarks.reward_overhead --model /tmp/smollm2 --reps 20

One step's solve samples (``--tasks`` edge-math tasks x ``--samples``, sampled once from
``--model`` on the trainer's solve conversation) are scored three ways, interleaved ``--reps``
times in one process:

* ``direct``: the code the solve step ran before reward functions existed: ``check_solutions``
  then ``length_reward``, ``alpha_s`` weighing correctness against length, and
  ``format_rule_reward`` per sample;
* ``builtin_set``: the same checks through the plug-in road the trainer now takes
  (``builtin_solve_rewards``: three TRL-signature functions, called, validated and combined
  by ``RewardSet.score`` from ``reward_call``'s keyword arguments);
* ``user_spec``: a reward loaded from a SPEC (``crsp_ops.crsp.rewards.solve:answer_match`` on
  the same tasks as dataset rows with an ``answer`` column), as a user's file is.

It also times one whole training step of the same size (``SelfPlayTrainer.train_step``) and
reports each road's extra time over ``direct`` as a share of that step. Nothing is
downloaded; run one at a time on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from dataclasses import replace

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crsp_ops.config import load_settings  # noqa: E402
from crsp_ops.crsp.policy.generation import InProcessGeneration  # noqa: E402
from crsp_ops.crsp.rewards.alpha_schedule import Alphas  # noqa: E402
from crsp_ops.crsp.rewards.formulas import format_rule_reward, length_reward  # noqa: E402
from crsp_ops.crsp.rewards.functions import RewardState, load_reward_function  # noqa: E402
from crsp_ops.crsp.rewards.solve import (  # noqa: E402
    at_alphas,
    builtin_solve_rewards,
    reward_call,
)
from crsp_ops.crsp.tasks import check_solutions, solve_messages, solve_response  # noqa: E402
from crsp_ops.crsp.tasks.edge import edge_math_tasks  # noqa: E402
from crsp_ops.crsp.tasks.task_types import PromptTask  # noqa: E402
from crsp_ops.crsp.trainer.build import build_trainer  # noqa: E402
from crsp_ops.crsp.trainer.options import make_executor  # noqa: E402
from crsp_ops.crsp.user_task import user_reward_set  # noqa: E402
from crsp_ops.inference.completions import SamplingParams  # noqa: E402
from crsp_ops.models.loading import load_causal_lm  # noqa: E402
from crsp_ops.paths import project_root  # noqa: E402


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir")
    parser.add_argument("--tasks", type=int, default=4, help="edge-math tasks per step")
    parser.add_argument("--samples", type=int, default=8, help="solve samples per task")
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=20, help="scorings of each road")
    parser.add_argument("--seed", type=int, default=2)
    return parser.parse_args(argv)


def direct_rewards(tasks, conversations, completions, executor, settings, alpha_s) -> list:
    """The solve step's scoring before the plug-in road (kept here as the baseline)."""
    responses = [solve_response(m, c.text) for m, c in zip(conversations, completions,
                                                           strict=True)]
    checks = check_solutions(tasks, responses, executor)
    out = []
    for completion, check in zip(completions, checks, strict=True):
        length = length_reward(len(completion.token_ids),
                               max_length=settings.reward.length_max_length,
                               penalty_threshold=settings.reward.length_penalty_threshold)
        role = alpha_s * float(check.correct) + (1.0 - alpha_s) * length
        out.append(format_rule_reward(well_formed=check.well_formed, passed=check.correct,
                                      role_reward=role))
    return out


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def step_settings(args: argparse.Namespace):
    """The project's settings for one solve-only step of the edge-math tasks at these sizes."""
    return load_settings(project_root(), [
        "tracking.enabled=n", "crsp.problem_types=math", "crsp.math_source=edge",
        f"crsp.seed={args.seed}", f"train.tasks_per_type={args.tasks}",
        f"train.solver_samples={args.samples}", "train.proposals_per_step=0",
        "train.critiques_per_task=0", f"train.max_new_tokens_solve={args.max_new_tokens}",
        "train.steps=1", "train.eval_interval=0"]).settings


def main(argv=None) -> int:
    args = parse_args(argv)
    settings = step_settings(args)
    train_tasks, _ = edge_math_tasks(settings.crsp)
    tasks = [task for task in train_tasks[: args.tasks] for _ in range(args.samples)]
    model, tokenizer = load_causal_lm(args.model)
    executor = make_executor(settings.crsp)
    try:
        generation = InProcessGeneration(model, tokenizer, device="cpu", batch_size=32)
        conversations = [solve_messages(task) for task in tasks]
        completions = generation.backend.generate(conversations, SamplingParams(
            max_new_tokens=args.max_new_tokens, temperature=0.7, top_p=1.0, seed=args.seed))
        alphas = Alphas(0.8, 0.6)
        builtin = at_alphas(builtin_solve_rewards(
            executor, length_max_length=settings.reward.length_max_length,
            length_penalty_threshold=settings.reward.length_penalty_threshold), alphas)
        rows = [PromptTask(solve_messages(task), {"answer": task.answer}) for task in tasks]
        user = user_reward_set([load_reward_function(
            "crsp_ops.crsp.rewards.solve:answer_match", project_root())], settings.train,
            ["prompt", "answer"])
        state = RewardState(1, 1)
        direct = direct_rewards(tasks, conversations, completions, executor, settings,
                                alphas.alpha_s)
        assert builtin.score(reward_call(tasks, completions, state)).totals == direct
        roads = {
            "direct": lambda: direct_rewards(tasks, conversations, completions, executor,
                                             settings, alphas.alpha_s),
            "builtin_set": lambda: builtin.score(reward_call(tasks, completions, state)),
            "user_spec": lambda: user.score(reward_call(rows, completions, state)),
        }
        seconds = {name: [] for name in roads}
        for _ in range(args.reps):  # interleaved, so drift hits every road alike
            for name, road in roads.items():
                seconds[name].append(timed(road))
        with tempfile.TemporaryDirectory() as out:
            trainer = build_trainer(
                replace(settings, generation=replace(settings.generation, batch_size=32)),
                model, tokenizer, out_dir=out, tasks=train_tasks)
            try:
                step_s = timed(trainer.train_step)
            finally:
                trainer.close()
    finally:
        executor.close()
    print(json.dumps(report(args, len(tasks), seconds, step_s)))
    return 0


def report(args: argparse.Namespace, samples: int, seconds: dict[str, list[float]],
           step_s: float) -> dict:
    """The JSON line: each road's median scoring time, its extra over direct as a step share."""
    median_ms = {name: statistics.median(values) * 1000 for name, values in seconds.items()}
    return {
        "benchmark": "reward_overhead", "model": str(args.model), "samples": samples,
        "max_new_tokens": args.max_new_tokens, "reps": args.reps,
        "scoring_ms_median": {name: round(value, 3) for name, value in median_ms.items()},
        "step_s": round(step_s, 2),
        "extra_share_of_step": {
            name: round((median_ms[name] - median_ms["direct"]) / 1000 / step_s, 6)
            for name in ("builtin_set", "user_spec")},
    }


if __name__ == "__main__":
    raise SystemExit(main())
