"""Learning-curve gains over training runs: per run, then the mean with a 95% t-interval.

Reads the ``learning_curve.json`` files that ``benchmarks.learning curve --out DIR`` wrote,
one per training run. A run is its ``--seed`` (the tasks, their order and the held-out set)
and its ``--sampling-seed`` (each arm's sampling; default the seed). Prints one JSON line: for
every arm and every run that holds it, the held-out solve rate at step 0 and at ``--step``
(default: the last evaluation every file has), the gain (after − before, paired over that
run's tasks: the difference of the two rates), whether the run learned at all (its paired
interval above 0; ``learned_runs`` counts them per arm), the mean-reward gain where the run
recorded one (dataset tasks), the share of well-formed answers that are
correct before and after (answer learning apart from format learning), and over the runs the
mean gain and mean final rate with Student-t 95% intervals. With both arms of ``--compare``
(default ``crsp grpo``), A − B at that step three ways:

* ``A_minus_B``: paired over the runs that hold both arms (the arms of one run may come from
  two reports with the same seed and sampling seed). Right for runs on different ``--seed``
  values, where each pair shares its tasks and held-out set.
* ``A_minus_B_welch``: the difference of the arms' mean final rates with a Welch interval over
  all their runs. Right for runs that differ only in ``--sampling-seed``, where an A run and a
  B run share nothing that pairing would cancel, and an arm may have been run alone.
* ``A_minus_B_tasks``: paired over the held-out *tasks*: each task's correct share over A's
  runs minus over B's, a bootstrap over tasks. It needs the ``evaluations.jsonl`` journal
  beside every report and runs that share one held-out set (one ``--seed``).

    python -m benchmarks.learning seeds /tmp/lc/seed1/learning_curve.json \
        /tmp/lc/seed2/learning_curve.json [--step 8] [--figure /tmp/lc/runs.png] \
        [--prior-summary lab/results/learning_curve_smollm2.json]

``--prior-summary`` adds the runs of an earlier JSON line of this script (the curve files it
read need not exist any more), so runs measured over several sessions add up; a run that a
report also holds is taken from the report. ``lab/results/learning_curve_smollm2.json``
holds the SmolLM2 runs quoted in ``lab/notebook/RESULTS.md``: given alone, it prints their
summary.

``--figure`` draws every arm's mean curve over the reports' runs (the steps all of them evaluated),
with the 95% t-interval over runs as the band (an arm with one run keeps its held-out band).

The intervals are over runs, so they widen with few of them (t = 12.7 for 2 runs, 4.3 for 3).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

import numpy as np
from scipy import stats  # comes with scikit-learn

from crsp_ops.crsp.trainer.learning_curve import CurvePoint, save_curve_figure
from crsp_ops.evaluation.bootstrap import bootstrap_interval


def seed_interval(values: list[float], confidence: float = 0.95) -> dict:
    """Mean of per-run values with a Student-t interval (``None`` bounds for one run).

    >>> seed_interval([0.2, 0.3, 0.25])["ci95"]
    [0.1258, 0.3742]
    """
    mean = statistics.fmean(values)
    if len(values) < 2:
        return {"mean": round(mean, 4), "ci95": [None, None], "seeds": len(values)}
    half = float(stats.t.ppf((1 + confidence) / 2, len(values) - 1)
                 * statistics.stdev(values) / len(values) ** 0.5)
    return {"mean": round(mean, 4), "ci95": [round(mean - half, 4), round(mean + half, 4)],
            "seeds": len(values)}


def welch_interval(first: list[float], second: list[float], confidence: float = 0.95) -> dict:
    """Mean of ``first`` − mean of ``second`` with a Welch t-interval (unequal variances).

    >>> welch_interval([0.5, 0.4, 0.45], [0.6, 0.5])["ci95"]
    [-0.3988, 0.1988]
    """
    diff = statistics.fmean(first) - statistics.fmean(second)
    if len(first) < 2 or len(second) < 2:
        return {"diff": round(diff, 4), "ci95": [None, None], "runs": [len(first), len(second)]}
    shares = [statistics.variance(v) / len(v) for v in (first, second)]
    spread = sum(shares) ** 0.5
    if spread == 0:
        return {"diff": round(diff, 4), "ci95": [round(diff, 4)] * 2,
                "runs": [len(first), len(second)]}
    freedom = sum(shares) ** 2 / sum(s ** 2 / (len(v) - 1)
                                     for s, v in zip(shares, (first, second), strict=True))
    half = float(stats.t.ppf((1 + confidence) / 2, freedom) * spread)
    return {"diff": round(diff, 4), "ci95": [round(diff - half, 4), round(diff + half, 4)],
            "runs": [len(first), len(second)]}


def point_at(curve: list[dict], step: int) -> dict:
    """The curve row of ``step``."""
    for row in curve:
        if row["step"] == step:
            return row
    raise ValueError(f"no evaluation at step {step} (steps: {[r['step'] for r in curve]})")


def run_rows(report: dict, step: int) -> dict[str, dict]:
    """Per arm: before/after solve rate, gain, and correct-among-well-formed of one run."""
    sampling = report.get("sampling_seed")
    rows = {}
    for arm, summary in report["arms"].items():
        before, after = point_at(summary["curve"], 0), point_at(summary["curve"], step)
        rows[arm] = {"seed": report["seed"],
                     "sampling_seed": report["seed"] if sampling is None else sampling,
                     "before": before["solve_rate"], "after": after["solve_rate"],
                     "gain": round(after["solve_rate"] - before["solve_rate"], 4),
                     "learned": learned(summary, step),
                     **reward_gain(summary, step),
                     "well_formed_after": after["well_formed"],
                     "correct_among_well_formed": [round(before["solve_rate_well_formed"], 3),
                                                   round(after["solve_rate_well_formed"], 3)]}
    return rows


def learned(summary: dict, step: int) -> bool | None:
    """Whether the run's paired after − before interval at its last step lies above 0.

    ``None`` when ``step`` is not the run's last evaluation (the interval is the last one's).

    >>> learned({"curve": [{"step": 0}, {"step": 8}],
    ...          "after_minus_before": {"diff": 0.1, "ci95": [0.02, 0.18]}}, 8)
    True
    """
    if summary["curve"][-1]["step"] != step or "after_minus_before" not in summary:
        return None
    return summary["after_minus_before"]["ci95"][0] > 0


def reward_gain(summary: dict, step: int) -> dict:
    """``{"reward_gain": d}``, the run's mean-reward after − before, where it was recorded."""
    gain = summary.get("reward_after_minus_before")
    if gain is None or summary["curve"][-1]["step"] != step:
        return {}
    return {"reward_gain": gain["diff"]}


RunKey = tuple[int, int]


def report_runs(reports: list[dict], step: int) -> dict[RunKey, dict[str, dict]]:
    """Each report's per-arm rows at ``step``, keyed by (seed, sampling seed)."""
    runs: dict[RunKey, dict[str, dict]] = {}
    for report in reports:
        rows = run_rows(report, step)
        key = next((row["seed"], row["sampling_seed"]) for row in rows.values())
        runs.setdefault(key, {}).update(rows)
    return runs


def prior_runs(summary: dict, step: int) -> dict[RunKey, dict[str, dict]]:
    """The per-run rows of an earlier ``learning_curve_seeds`` line, keyed like ``report_runs``.

    Its curve files may be gone; its rows are all a summary needs. It must be at ``step``.
    """
    if summary["step"] != step:
        raise ValueError(f"the prior summary compares step {summary['step']}, "
                         f"these runs step {step}: pass --step {summary['step']}")
    runs: dict[RunKey, dict[str, dict]] = {}
    for arm, arm_summary in summary["arms"].items():
        for row in arm_summary["per_seed"]:
            runs.setdefault((row["seed"], row["sampling_seed"]), {})[arm] = row
    return runs


def common_step(reports: list[dict]) -> int:
    """The last step that every report evaluated."""
    steps = set.intersection(*({row["step"] for arm in r["arms"].values() for row in arm["curve"]}
                               for r in reports))
    if not steps:
        raise ValueError("the reports share no evaluated step")
    return max(steps)


def summarize(reports: list[dict], step: int | None = None,
              priors: tuple[dict, ...] = (), compare: tuple[str, str] = ("crsp", "grpo")
              ) -> dict:
    """The JSON line's content for ``reports`` and earlier summaries' runs at ``step``.

    ``step`` defaults to the last step every report evaluated, else the priors' step. A run
    (seed, sampling seed, arm) that a report holds is taken from the report, not a prior.
    ``compare`` names the arms A, B of the ``A_minus_B`` entries.
    """
    for prior in priors:
        if prior.get("benchmark") != "learning_curve_seeds":
            raise ValueError("a prior summary is a learning_curve_seeds JSON line "
                             f"(got benchmark={prior.get('benchmark')!r})")
    if step is None:
        step = common_step(reports) if reports else priors[0]["step"]
    runs: dict[RunKey, dict[str, dict]] = {}
    for source in [*(prior_runs(prior, step) for prior in priors), report_runs(reports, step)]:
        for key, rows in source.items():  # reports last: their runs replace the priors'
            runs.setdefault(key, {}).update(rows)
    per_run = list(runs.values())
    arms = sorted(set().union(*per_run))
    result = {"benchmark": "learning_curve_seeds", "step": step,
              "seeds": [seed for seed, _ in runs], "runs": [list(key) for key in runs],
              "arms": {}}
    for arm in arms:
        rows = [rows[arm] for rows in per_run if arm in rows]
        after = [row["after"] for row in rows]
        result["arms"][arm] = {"per_seed": rows,
                               "gain": seed_interval([row["gain"] for row in rows]),
                               "after": seed_interval(after),
                               "sd_after": round(statistics.stdev(after), 4)
                               if len(after) > 1 else None,
                               "learned_runs": [sum(row.get("learned") is True for row in rows),
                                                len(rows)]}
        rewards = [row["reward_gain"] for row in rows if "reward_gain" in row]
        if len(rewards) == len(rows):
            result["arms"][arm]["reward_gain"] = seed_interval(rewards)
    first, second = compare
    name = f"{first}_minus_{second}"
    both = [rows for rows in per_run if {first, second} <= set(rows)]
    if both:
        result[name] = seed_interval([rows[first]["after"] - rows[second]["after"]
                                      for rows in both])
    if {first, second} <= set(arms):
        result[f"{name}_welch"] = welch_interval(
            *([row["after"] for row in result["arms"][arm]["per_seed"]]
              for arm in (first, second)))
    return result


def task_verdicts(journal: Path, arm: str, step: int) -> list[bool] | None:
    """``arm``'s per-task verdicts at ``step`` from an ``evaluations.jsonl`` journal.

    Step 0 is scored once per report, under the arm name ``base``.
    """
    for line in journal.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["step"] == step and row["arm"] in ((arm, "base") if step == 0 else (arm,)):
            return row["correct_each"]
    return None


def tasks_interval(journals: list[Path] | dict[str, list[Path]], compare: tuple[str, str],
                   step: int) -> dict | None:
    """A − B at ``step`` paired over held-out tasks, each task's verdicts averaged over runs.

    ``journals``: every run's journal, read for both arms; or each arm's own journals (an arm
    whose runs came from other reports). ``None`` when an arm has no verdicts at ``step``; a
    ``ValueError`` when the runs scored different numbers of tasks (different held-out sets
    cannot be paired).

    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> rows = [{"arm": "a", "step": 8, "correct_each": [True, True, False, True]},
    ...         {"arm": "b", "step": 8, "correct_each": [True, False, False, True]}]
    >>> _ = (folder / "evaluations.jsonl").write_text("\\n".join(map(json.dumps, rows)))
    >>> tasks_interval([folder / "evaluations.jsonl"], ("a", "b"), 8)["diff"]
    0.25
    """
    shares = []
    for arm in compare:
        own = journals[arm] if isinstance(journals, dict) else journals
        verdicts = [v for v in (task_verdicts(j, arm, step) for j in own) if v is not None]
        if not verdicts:
            return None
        if len({len(v) for v in verdicts}) != 1:
            raise ValueError(f"{arm}'s runs scored different numbers of held-out tasks: "
                             "pair over tasks only runs of one --seed")
        shares.append((np.mean(np.array(verdicts, dtype=float), axis=0), len(verdicts)))
    (first, first_runs), (second, second_runs) = shares
    if len(first) != len(second):
        raise ValueError("the arms scored different numbers of held-out tasks")
    rows = np.stack([first, second], axis=1)
    low, high = bootstrap_interval(rows, lambda r: float(r[:, 0].mean() - r[:, 1].mean()))
    return {"diff": round(float(first.mean() - second.mean()), 4),
            "ci95": [round(low, 4), round(high, 4)], "tasks": len(first),
            "runs": [first_runs, second_runs]}


def mean_curve(curves: list[list[dict]]) -> list[CurvePoint]:
    """One arm's curve averaged over its runs, the bands the t-interval over runs.

    Only the steps every run evaluated are kept; one run is returned as it is.
    """
    if len(curves) == 1:
        return [CurvePoint(**{**row, "solve_rate_ci": tuple(row["solve_rate_ci"]),
                              "well_formed_ci": tuple(row["well_formed_ci"])})
                for row in curves[0]]
    steps = sorted(set.intersection(*({row["step"] for row in curve} for curve in curves)))
    points = []
    for step in steps:
        rows = [point_at(curve, step) for curve in curves]
        solve, formed = (seed_interval([row[key] for row in rows])
                         for key in ("solve_rate", "well_formed"))
        points.append(CurvePoint(
            step=step, samples=rows[0]["samples"], solve_rate=solve["mean"],
            solve_rate_ci=tuple(solve["ci95"]), well_formed=formed["mean"],
            well_formed_ci=tuple(formed["ci95"]),
            solve_rate_well_formed=statistics.fmean(r["solve_rate_well_formed"] for r in rows),
            tasks=rows[0]["tasks"]))
    return points


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="*", type=Path, help="learning_curve.json files")
    parser.add_argument("--prior-summary", type=Path, action="append", default=[],
                        help="a file holding an earlier JSON line of this script: its runs join "
                             "the reports' (repeatable)")
    parser.add_argument("--step", type=int, default=None,
                        help="the step compared with step 0 (default: the last common one)")
    parser.add_argument("--compare", nargs=2, default=["crsp", "grpo"], metavar=("A", "B"),
                        help="the arms of the A_minus_B entries (default: crsp grpo)")
    parser.add_argument("--figure", type=Path, default=None,
                        help="PNG of every arm's mean curve over its runs (reports only)")
    args = parser.parse_args(argv)
    if not args.reports and not args.prior_summary:
        parser.error("give learning_curve.json files, --prior-summary files, or both")
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.reports]
    priors = tuple(json.loads(path.read_text(encoding="utf-8")) for path in args.prior_summary)
    compare = tuple(args.compare)
    result = summarize(reports, args.step, priors, compare)
    journals = [path.parent / "evaluations.jsonl" for path in args.reports]
    if journals and all(journal.is_file() for journal in journals):
        paired_tasks = tasks_interval(journals, compare, result["step"])
        if paired_tasks is not None:
            result[f"{compare[0]}_minus_{compare[1]}_tasks"] = paired_tasks
    if args.figure:
        if not reports:
            parser.error("--figure draws the reports' curves: give learning_curve.json files")
        runs = {arm: [r["arms"][arm]["curve"] for r in reports if arm in r["arms"]]
                for arm in {arm for r in reports for arm in r["arms"]}}
        save_curve_figure({f"{arm} (mean of {len(curves)} runs)": mean_curve(curves)
                           for arm, curves in sorted(runs.items())}, args.figure,
                          title="bands: 95% t-interval over training runs")
        result["figure"] = str(args.figure)
    print(json.dumps(result))
    return 0
