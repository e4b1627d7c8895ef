"""The learning-efficiency suite: CRSP beside TRL's GRPOTrainer on users' tasks, over runs.

    python -m benchmarks.learning suite --model /tmp/smollm2 --split dev --runs 4 --out /tmp/suite
    python -m benchmarks.learning suite --model /tmp/smollm2 --split test --runs 4 \\
        --tasks word_problems --out /tmp/suite_test     # after lab/claims/ declares it

Each task is a folder of ``examples/`` written as a user writes one: ``train.jsonl``,
``dev.jsonl``, ``test.jsonl`` (seeded, disjoint) and a reward file with TRL's signature and no
crsp_ops import. For every task and each of the first ``--runs`` sampling seeds of the split
(``benchmarks/splits.py``; ``--seeds`` names others of its seeds),
``benchmarks.learning curve`` trains both arms from ``--model`` on the same prompts in the
same order (the split's schedule seed; ``--schedule per-run``: each run its own order, both
arms of a run the same) with the same reward file,
samples per prompt, prompts per step and completion budget (each task's own unless
``--tasks-per-step`` / ``--max-new-tokens`` set every task's), temperature and learning rate, and
scores them greedily on the split's file (``dev.jsonl`` or ``test.jsonl``). CRSP runs with its
defaults for a dataset (``train.preset=auto``); GRPO with TRL's own loss defaults. Both arms
train at ``--learning-rate`` (1e-5, the earlier claims' rate, unless set); ``--learning-rate
dataset`` is the rate CRSP ships for a dataset run (the ``dataset`` preset's), so the CRSP arm
runs its shipped defaults, learning rate included, and GRPO the same rate. A run whose
``learning_curve.json`` is already under ``--out`` is kept, so the suite resumes; ``--only-seeds``
shares the runs between processes or machines writing into one ``--out`` (the one that finds
every run on disk prints the summary). ``--arms crsp --runs-from DIR`` retrains one arm only
(after a change to it) and takes the other arm of each run from an earlier suite's ``DIR``:
the runs are deterministic, and runs whose settings differ are refused.

Per task (``seeds.summarize``): each arm's final success rate with a t-interval
over runs and its run-to-run standard deviation (``sd_after``; the budget is large enough when
it is below 0.05), the gain and mean-reward gain over runs, how many runs learned at all (paired
interval above 0), CRSP − GRPO over runs (Welch: the runs differ only in sampling seeds) and
paired over prompts (each prompt's success share over the runs) beside it, and the goal
verdicts: ``within_0_02`` (mean difference ≥ −0.02) and ``ahead`` (the Welch interval above 0).
``--out/<task>/runs.png`` draws every run's curve. One JSON line. Run it alone on the CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from matplotlib.figure import Figure

from benchmarks.learning.seeds import summarize, tasks_interval
from benchmarks.provenance import stamp
from benchmarks.splits import LEARNING_CURVE, SPLITS
from crsp_ops.atomic_io import atomic_path
from crsp_ops.config.train_presets import PRESETS

ROOT = Path(__file__).resolve().parents[2]
ARMS = ("crsp", "grpo")
GOAL_MARGIN = 0.02  # CRSP may trail GRPO by at most this much, mean over runs
SD_BUDGET = 0.05  # run-to-run standard deviation of the final success rate at a large budget
# What a dataset run trains at unless the user sets a rate (train.preset=auto on a dataset): its
# one home is the ``dataset`` preset; ``--learning-rate dataset`` names it.
DATASET_LEARNING_RATE = PRESETS["dataset"]["train.learning_rate"]


@dataclass(frozen=True)
class SuiteTask:
    """A user task of the suite: its folder, reward SPEC, completion budget (tokens) and
    prompts per step (chosen on dev so that each arm's run-to-run spread is below 0.05)."""

    folder: str
    reward: str
    max_new_tokens: int
    tasks_per_step: int = 4

    def eval_file(self, split: str) -> Path:
        return ROOT / self.folder / f"{split}.jsonl"


SUITE = {
    "json_extraction": SuiteTask("examples/json_extraction", "reward.py:json_fields", 48),
    "word_problems": SuiteTask("examples/word_problems", "reward.py:exact_number", 32),
    # 16 prompts a step: at 4 and 8, a run could stay on one label for every prompt (notebook)
    "review_sentiment": SuiteTask("examples/review_sentiment", "reward.py:one_word_label", 16,
                                  tasks_per_step=16),
}


def learning_rate(text: str) -> float:
    """``--learning-rate``: a number, or ``dataset`` for the rate CRSP ships for a dataset run.

    >>> learning_rate("dataset") == DATASET_LEARNING_RATE, learning_rate("1e-5")
    (True, 1e-05)
    """
    return DATASET_LEARNING_RATE if text == "dataset" else float(text)


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--tasks", nargs="+", choices=sorted(SUITE), default=sorted(SUITE))
    parser.add_argument("--split", choices=SPLITS, default="dev")
    parser.add_argument("--runs", type=int, default=4, help="sampling seeds per arm (>= 2)")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="the runs' sampling seeds, from the split's list (default: its "
                             "first --runs); a claim on seeds no earlier run used names them")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--eval-every", type=int, default=4)
    parser.add_argument("--heldout", type=int, default=200, help="rows of the split's file")
    parser.add_argument("--tasks-per-step", type=int, default=None,
                        help="every task's prompts per step (default: the task's own)")
    parser.add_argument("--samples", type=int, default=8, help="samples per prompt")
    parser.add_argument("--learning-rate", type=learning_rate, default=1e-5,
                        help="both arms' learning rate (default 1e-5, the earlier claims'); "
                             "'dataset': the shipped dataset default "
                             f"({DATASET_LEARNING_RATE:g}, train.preset=dataset's)")
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="every task's completion budget (default: the task's own)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="a configuration override for the CRSP arm (repeatable)")
    parser.add_argument("--schedule", choices=("shared", "per-run"), default="shared",
                        help="shared: every run trains on the split's one prompt order; "
                             "per-run: run i on its own (schedule seed = its sampling seed), "
                             "so the spread over runs includes the order's")
    parser.add_argument("--only-seeds", type=int, nargs="+", default=None,
                        help="train only these of the runs' sampling seeds in this process "
                             "(others may train the rest into the same --out); the summary "
                             "is printed once every run is on disk")
    parser.add_argument("--arms", nargs="+", choices=ARMS, default=list(ARMS),
                        help="the arms trained here (default both)")
    parser.add_argument("--runs-from", type=Path, default=None,
                        help="an earlier suite's --out: the arms not in --arms are read from "
                             "its runs of the same tasks, split and seeds")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    seeds = LEARNING_CURVE[args.split].sampling_seeds
    if args.seeds is not None:
        outside = sorted(set(args.seeds) - set(seeds))
        if outside or len(set(args.seeds)) != len(args.seeds):
            parser.error(f"--seeds must be distinct seeds of the {args.split} split's "
                         f"{list(seeds)}; not: {outside or 'repeated'}")
        args.runs = len(args.seeds)
    if not 2 <= args.runs <= len(seeds):
        parser.error(f"--runs must be 2..{len(seeds)} (the {args.split} split's seeds)")
    args.seeds = tuple(args.seeds or seeds[:args.runs])  # the runs' sampling seeds, in order
    unknown = set(args.only_seeds or ()) - set(args.seeds)
    if unknown:
        parser.error(f"--only-seeds {sorted(unknown)} not among the runs' sampling seeds "
                     f"{list(args.seeds)}")
    return args


def prompts_per_step(args, name: str) -> int:
    """The task's prompts per step: ``--tasks-per-step`` when given, else the task's own."""
    return args.tasks_per_step or SUITE[name].tasks_per_step


def run_command(args, name: str, sampling_seed: int, out: Path) -> list[str]:
    """The ``benchmarks.learning curve`` command of one run of one task."""
    task = SUITE[name]
    budget = args.max_new_tokens or task.max_new_tokens
    return [sys.executable, "-m", "benchmarks.learning", "curve", "--model", str(args.model),
            "--arms", *args.arms, "--dataset", str(ROOT / task.folder / "train.jsonl"),
            "--eval-dataset", str(task.eval_file(args.split)),
            "--reward", str(ROOT / task.folder / task.reward), "--steps", str(args.steps),
            "--eval-every", str(args.eval_every), "--heldout", str(args.heldout),
            "--tasks-per-step", str(prompts_per_step(args, name)),
            "--samples", str(args.samples),
            "--learning-rate", str(args.learning_rate), "--temperature", str(args.temperature),
            "--max-new-tokens", str(budget), "--split", args.split,
            "--sampling-seed", str(sampling_seed), "--out", str(out),
            *(("--schedule-seed", str(sampling_seed)) if args.schedule == "per-run" else ()),
            *(item for override in args.overrides for item in ("--set", override))]


def curve_env() -> dict[str, str]:
    """The environment of a run: this one, with the repository importable from any directory."""
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONPATH": path}


def run_task(args, name: str) -> list[Path]:
    """Every run of one task (those on disk kept, ``--only-seeds`` alone trained); the paths
    of their reports."""
    reports = []
    for sampling_seed in args.seeds:
        out = args.out / name / f"sampling-{sampling_seed}"
        report = out / "learning_curve.json"
        mine = args.only_seeds is None or sampling_seed in args.only_seeds
        if mine and not report.is_file():
            print(f"# {name}: sampling seed {sampling_seed}", file=sys.stderr, flush=True)
            subprocess.run(run_command(args, name, sampling_seed, out), check=True,
                           env=curve_env(), stdout=subprocess.DEVNULL)
        reports.append(report)
    return reports


def verdicts(summary: dict) -> dict:
    """The goal read off one task's summary (module docstring)."""
    welch = summary.get("crsp_minus_grpo_welch")
    if welch is None:
        return {}
    sds = {arm: summary["arms"][arm]["sd_after"] for arm in ("crsp", "grpo")}
    return {"within_0_02": welch["diff"] >= -GOAL_MARGIN,
            "ahead": welch["ci95"][0] is not None and welch["ci95"][0] > 0,
            "sd_below_0_05": all(sd is not None and sd < SD_BUDGET for sd in sds.values())}


def save_runs_figure(reports: list[dict], path: Path, title: str) -> Path:
    """Every run's held-out success curve, one colour per arm; written atomically as PNG."""
    figure = Figure(figsize=(7, 4.2), layout="constrained")
    axis = figure.subplots()
    for index, arm in enumerate(ARMS):
        for run, report in enumerate(r for r in reports if arm in r["arms"]):
            curve = report["arms"][arm]["curve"]
            axis.plot([p["samples"] for p in curve], [p["solve_rate"] for p in curve],
                      marker="o", color=f"C{index}", alpha=0.7,
                      label=arm if run == 0 else None)
    axis.set(xlabel="generated samples", ylabel="held-out success rate (greedy)", title=title)
    axis.grid(alpha=0.3)
    axis.legend()
    with atomic_path(path, suffix=".png") as tmp:
        figure.savefig(tmp, dpi=110, format="png")
    return path


class MismatchedRuns(ValueError):
    """``--runs-from`` holds a run trained with other settings than this suite's."""


SHARED_SETTINGS = ("steps", "eval_every", "heldout", "tasks_per_step", "samples",
                   "learning_rate", "temperature", "max_new_tokens", "split", "seed",
                   "sampling_seed", "schedule_seed")


def run_settings(report: dict) -> dict:
    """The settings a run's report records, as ``kept_run`` compares them: a report from
    before a key was recorded has ``None`` there (not compared), and its prompt order was
    its ``seed``'s.

    >>> run_settings({"seed": 4521, "steps": 8})["schedule_seed"]
    4521
    """
    settings = {key: report.get(key) for key in SHARED_SETTINGS}
    if settings["schedule_seed"] is None:
        settings["schedule_seed"] = report.get("seed")
    return settings


def kept_run(args, report: dict, path: Path) -> dict:
    """The run of ``--runs-from`` that matches ``report``'s, holding only the arms not
    trained here.

    Raises:
        MismatchedRuns: it is missing, or it was trained with other settings.
    """
    if not path.is_file():
        raise MismatchedRuns(f"--runs-from has no run {path}")
    kept = json.loads(path.read_text(encoding="utf-8"))
    ours, theirs = run_settings(report), run_settings(kept)
    differ = [key for key in SHARED_SETTINGS
              if None not in (ours[key], theirs[key]) and ours[key] != theirs[key]]
    if differ:
        raise MismatchedRuns(f"--runs-from {path} was trained with other {', '.join(differ)}")
    return {**kept, "arms": {arm: curve for arm, curve in kept["arms"].items()
                             if arm not in args.arms}}


def task_reports(args, name: str, paths: list[Path]) -> tuple[list[dict], dict]:
    """The task's run reports (with ``--runs-from``'s arms added) and each arm's journals."""
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in paths]
    journals = {arm: [path.parent / "evaluations.jsonl" for path in paths] for arm in ARMS}
    if args.runs_from is None:
        return reports, journals
    kept_paths = [args.runs_from / name / path.parent.name / path.name for path in paths]
    kept = [kept_run(args, report, path) for report, path in zip(reports, kept_paths,
                                                                  strict=True)]
    for arm in set(ARMS) - set(args.arms):
        journals[arm] = [path.parent / "evaluations.jsonl" for path in kept_paths]
    return kept + reports, journals


def summarize_task(args, name: str, paths: list[Path]) -> dict:
    """One task's summary, paired-over-prompts interval, verdicts and figure."""
    reports, journals = task_reports(args, name, paths)
    summary = summarize(reports)
    if all(journal.is_file() for own in journals.values() for journal in own):
        summary["crsp_minus_grpo_prompts"] = tasks_interval(journals, ARMS, summary["step"])
    figure = save_runs_figure(reports, args.out / name / "runs.png",
                              f"{name} ({args.split}): every run, {len(paths)} per arm")
    return {**summary, "tasks_per_step": prompts_per_step(args, name),
            "goal": verdicts(summary), "figure": shown(figure)}


def shown(path: Path) -> str:
    """A path as the JSON line records it: relative to the repository when inside it."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def main(argv=None) -> int:
    args = parse_args(argv)
    # where the runs ran (the commit, a clean tree, the scored files' hashes), taken before them
    origin = stamp([SUITE[name].eval_file(args.split) for name in args.tasks], ROOT)
    tasks = {}
    for name in args.tasks:
        reports = run_task(args, name)
        missing = [str(path.parent) for path in reports if not path.is_file()]
        if missing:
            print(f"# {name}: no summary yet, runs still to come: {missing}", file=sys.stderr)
            continue
        try:
            tasks[name] = summarize_task(args, name, reports)
        except MismatchedRuns as error:
            print(f"learning_suite: {error}", file=sys.stderr)
            return 2
    if not tasks:
        return 0
    settings = {key: (shown(value) if isinstance(value, Path) else value)
                for key, value in vars(args).items() if key != "tasks"}
    print(json.dumps({"benchmark": "learning_suite", **settings, **origin, "tasks": tasks}))
    return 0
