"""Learning-curve gains over training seeds: per seed, then the mean with a 95% t-interval.

Reads the ``learning_curve.json`` files that ``benchmarks/learning_curve.py --out DIR --seed S``
wrote (one per seed; each seed draws its own training order, sampling and held-out tasks) and
prints one JSON line: for every arm and every seed the held-out solve rate at step 0 and at
``--step`` (default: the last evaluation every file has), the gain (after − before, paired over
that seed's tasks: the difference of the two rates), the share of well-formed answers that are
correct before and after (answer learning apart from format learning), and over the seeds the
mean gain with a Student-t 95% interval; with both ``crsp`` and ``grpo`` arms, the same for
CRSP − GRPO at that step.

    python benchmarks/learning_curve_seeds.py /tmp/lc/seed1/learning_curve.json \
        /tmp/lc/seed2/learning_curve.json [--step 8]

The interval is over seeds, so it widens with few of them (t = 12.7 for 2 seeds, 4.3 for 3).
"""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from scipy import stats  # comes with scikit-learn


def seed_interval(values: list[float], confidence: float = 0.95) -> dict:
    """Mean of per-seed values with a Student-t interval (``None`` bounds for one seed).

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


def point_at(curve: list[dict], step: int) -> dict:
    """The curve row of ``step``."""
    for row in curve:
        if row["step"] == step:
            return row
    raise ValueError(f"no evaluation at step {step} (steps: {[r['step'] for r in curve]})")


def seed_rows(report: dict, step: int) -> dict[str, dict]:
    """Per arm: before/after solve rate, gain, and correct-among-well-formed of one seed."""
    rows = {}
    for arm, summary in report["arms"].items():
        before, after = point_at(summary["curve"], 0), point_at(summary["curve"], step)
        rows[arm] = {"seed": report["seed"], "before": before["solve_rate"],
                     "after": after["solve_rate"],
                     "gain": round(after["solve_rate"] - before["solve_rate"], 4),
                     "well_formed_after": after["well_formed"],
                     "correct_among_well_formed": [round(before["solve_rate_well_formed"], 3),
                                                   round(after["solve_rate_well_formed"], 3)]}
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="learning_curve.json files")
    parser.add_argument("--step", type=int, default=None,
                        help="the step compared with step 0 (default: the last common one)")
    args = parser.parse_args(argv)
    reports = [json.loads(path.read_text(encoding="utf-8")) for path in args.reports]
    steps = set.intersection(*({row["step"] for arm in r["arms"].values() for row in arm["curve"]}
                               for r in reports))
    step = args.step if args.step is not None else max(steps)
    per_seed = [seed_rows(report, step) for report in reports]
    arms = sorted(set.intersection(*(set(rows) for rows in per_seed)))
    result = {"benchmark": "learning_curve_seeds", "step": step,
              "seeds": [r["seed"] for r in reports], "arms": {}}
    for arm in arms:
        rows = [rows[arm] for rows in per_seed]
        result["arms"][arm] = {"per_seed": rows,
                               "gain": seed_interval([row["gain"] for row in rows])}
    if {"crsp", "grpo"} <= set(arms):
        result["crsp_minus_grpo"] = seed_interval(
            [rows["crsp"]["after"] - rows["grpo"]["after"] for rows in per_seed])
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
