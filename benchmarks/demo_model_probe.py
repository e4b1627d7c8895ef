"""Probe the demo's tiny base model: step-0 solve rate and FinanceBench correctness (issue 43).

Builds the base model exactly as ``make demo`` does (the limo, financebench and base-model
stages of a fresh project with this checkout's Kconfig defaults plus ``--set`` overrides),
then decodes greedily, unsteered:

- the train stage's held-out edge tasks of each ``--crsp-seeds`` seed (``crsp.seed``; the
  solve corpus leaves that seed's held-out questions out, so the base model is rebuilt per
  seed), scored by the trainer's own checker: the step-0 solve rate;
- the first ``--finance`` questions of the evolve stage's held-out split, graded as evolve
  grades them: the correctness evolve starts from;
- with ``--train``, the demo's train stage itself (``crsp-ops train`` from the base model, as
  the pipeline runs it with seeding off): its held-out paired gain from ``<out>.metrics.json``.

    python -m benchmarks.demo_model_probe --crsp-seeds 1 2 --train --set model.tiny_train_steps=900

Prints one JSON line: per seed the base model's training time, the solve rate with its 95%
interval, and the FinanceBench correctness with its interval and answer form counts. For
choosing the demo's corpus settings on dev seeds; it makes no claim.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crsp_ops.config import load_settings, sync_params  # noqa: E402
from crsp_ops.crsp.rewards.functions import RewardState  # noqa: E402
from crsp_ops.crsp.rewards.solve import builtin_solve_rewards  # noqa: E402
from crsp_ops.crsp.tasks.edge import edge_math_tasks  # noqa: E402
from crsp_ops.crsp.trainer.evaluation import score_heldout  # noqa: E402
from crsp_ops.crsp.trainer.options import make_executor  # noqa: E402
from crsp_ops.evaluation.intervals import proportion_interval  # noqa: E402
from crsp_ops.evaluation.minibatch_grading import grading_from_settings  # noqa: E402
from crsp_ops.evolve.inputs import load_pool_and_heldout  # noqa: E402
from crsp_ops.evolve.minibatch import run_minibatch  # noqa: E402
from crsp_ops.inference.open_backend import prompt_template, sampling_params  # noqa: E402
from crsp_ops.inference.transformers_backend import TransformersBackend  # noqa: E402
from crsp_ops.paths import copy_config_tree  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
STAGES = ("limo", "financebench", "base-model")


def run_stage(root: Path, stage: list[str], overrides: list[str]) -> None:
    """Run one ``crsp-ops`` stage in the project ``root``, tracking off, with ``overrides``."""
    sets = [arg for item in ["tracking.enabled=n", *overrides] for arg in ("--set", item)]
    subprocess.run([sys.executable, "-m", "crsp_ops.cli", *stage, *sets], cwd=root,
                   env={**os.environ, "CRSP_OPS_ROOT": str(root)}, check=True,
                   capture_output=True)


def build_base_model(root: Path, overrides: list[str]) -> float:
    """A fresh project at ``root`` (this checkout's Kconfig), its data and base-model stages run.

    Returns the seconds the stages took.
    """
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    copy_config_tree(REPO, root)
    sync_params(root)
    started = time.perf_counter()
    for stage in STAGES:
        run_stage(root, [stage], overrides)
    return time.perf_counter() - started


def train_gain(root: Path, overrides: list[str]) -> dict:
    """Run the train stage on ``models/base``; its held-out metrics and seconds taken."""
    started = time.perf_counter()
    run_stage(root, ["train", "--model", "models/base", "--out", "models/crsp"], overrides)
    metrics = json.loads((root / "models/crsp.metrics.json").read_text())
    return {"train_s": round(time.perf_counter() - started, 1),
            **{k.removeprefix("eval/solve_rate/"): round(v, 4) for k, v in metrics.items()
               if k.startswith(("eval/solve_rate/all", "eval/solve_rate/gain"))}}


def solve_rate(settings, backend: TransformersBackend, limit: int) -> dict:
    """Greedy step-0 solve rate on the train stage's first ``limit`` held-out tasks.

    Scored as the trainer's own evaluation scores them (``score_heldout``, CRSP's solve
    rewards), with its bootstrap 95% interval.
    """
    _, heldout = edge_math_tasks(settings.crsp)
    tasks = heldout[:limit]
    executor = make_executor(settings.crsp)
    try:
        rewards = builtin_solve_rewards(
            executor, length_max_length=settings.reward.length_max_length,
            length_penalty_threshold=settings.reward.length_penalty_threshold)
        scores = score_heldout(backend, tasks, rewards, RewardState(0, settings.train.steps),
                               max_new_tokens=settings.train.max_new_tokens_solve)
    finally:
        executor.close()
    metrics = scores.metrics
    return {"tasks": len(tasks), "rate": round(metrics["all"], 3),
            "ci": [round(metrics["all_ci_low"], 3), round(metrics["all_ci_high"], 3)]}


def finance_correctness(root: Path, settings, backend: TransformersBackend, limit: int) -> dict:
    """Greedy, unsteered correctness on the evolve stage's first ``limit`` held-out questions."""
    _, heldout = load_pool_and_heldout(root / "data/financebench", heldout_size=0, seed=0)
    questions = list(heldout[:limit])
    result = run_minibatch(questions, backend, None, template=prompt_template(settings),
                           sampling=sampling_params(settings),
                           grade=grading_from_settings(settings.scoring))
    correct = [record.is_correct for record in result.records]
    by_kind: dict[str, list[int]] = {}
    for question, record in zip(questions, result.records, strict=True):
        kind = "extraction" if question.question_reasoning == "Information extraction" else "other"
        by_kind.setdefault(kind, [0, 0])
        by_kind[kind][0] += record.is_correct
        by_kind[kind][1] += 1
    return {"questions": len(questions), "correctness": round(sum(correct) / len(questions), 3),
            "ci": [round(x, 3) for x in proportion_interval(correct)],
            "right_of_kind": {k: f"{r}/{n}" for k, (r, n) in sorted(by_kind.items())},
            "mean_tokens": round(result.scores.mean_token_length, 1),
            "example": result.records[0].answer[:200]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--crsp-seeds", type=int, nargs="+", default=[1],
                        help="crsp.seed values (dev seeds: never a declared claim's)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="KEY=VALUE settings for every stage (e.g. model.tiny_train_steps=900)")
    parser.add_argument("--tasks", type=int, default=None,
                        help="held-out edge tasks per seed (default: train.eval_math_tasks)")
    parser.add_argument("--finance", type=int, default=100, help="held-out FinanceBench questions")
    parser.add_argument("--train", action="store_true",
                        help="also run the train stage and report its held-out paired gain")
    parser.add_argument("--project", type=Path,
                        default=Path(tempfile.gettempdir()) / "crsp_demo_model_probe")
    args = parser.parse_args()
    started = time.perf_counter()
    seeds = []
    for seed in args.crsp_seeds:
        overrides = [*args.overrides, f"crsp.seed={seed}"]
        build_s = build_base_model(args.project, overrides)
        settings = load_settings(args.project, overrides, env={}).settings
        backend = TransformersBackend.from_pretrained(args.project / "models/base", device="cpu",
                                                      batch_size=32)
        seeds.append({"crsp_seed": seed, "build_s": round(build_s, 1),
                      "solve": solve_rate(settings, backend,
                                          args.tasks or settings.train.eval_math_tasks),
                      "finance": finance_correctness(args.project, settings, backend,
                                                     args.finance),
                      **({"train": train_gain(args.project, overrides)} if args.train else {})})
        print(f"# {json.dumps(seeds[-1])}", file=sys.stderr, flush=True)
    print(json.dumps({"benchmark": "demo_model_probe", "overrides": args.overrides,
                      "seeds": seeds, "elapsed_s": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
