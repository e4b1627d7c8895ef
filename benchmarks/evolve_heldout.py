"""Held-out tokens, correctness and composite of evolved deltas on a real model, per arm and seed.

Builds (once, under ``--project``) the stage outputs of a profile with the real stage commands
(``financebench`` with a held-out split of ``--heldout`` questions, ``base-model``, ``clusters``,
``deltas``; the SmolLM2 profile reads the HF directory ``convert-model`` wrote to
``--converted``). The held-out set is fixed by the split and recorded by its content hash
(``heldout.sha256``, the tag every evolve run carries). Then, for every seed, each arm searches
(offline proposer, Optuna TPE, the offline proposer with a Pareto frontier; the reflector too
when ``OPENAI_BASE_URL`` is set) under the same budget of generated answers (the default
proposer's: ``LoopConfig.answer_budget``, candidates and paired re-scores of the best counted)
with the same minibatch draws and the same paired acceptance, and each arm's best deltas and the
initial deltas are scored on the same held-out questions (greedy decoding).

Per arm it prints one table over the seeds: mean tokens, correctness and composite with the
*paired* gains over the initial deltas and their 95% bootstrap intervals (questions resampled
jointly, ``evaluation.paired_gains``), the correctness non-inferiority verdict (lower bound
>= -0.02), whether issue 26's goal was met (tokens -20%, non-inferior, composite interval above
0), the answers each search generated, and the wall time; then the seed-averaged composite of
the first arm minus each other arm, paired over questions. One JSON line goes to stdout.

    crsp-ops convert-model --set model.source=smollm2 --out /tmp/smollm2_hf   # once, ~1 min
    python -m benchmarks.evolve_heldout --converted /tmp/smollm2_hf --seeds 0 1 2 \
        --heldout 400 --project /tmp/crsp_evolve_heldout_400 > evolve_heldout.json

    # a quick check of the plumbing (minutes): 1 seed, 2 iterations, 8 questions
    python -m benchmarks.evolve_heldout --converted /tmp/smollm2_hf --seeds 0 --heldout 8 \
        --iterations 2 --set evolve.minibatch_size=2 --project /tmp/crsp_evolve_heldout_8

Arms: ``offline`` (the default proposer), ``tpe`` / ``cmaes`` / ``random`` (Optuna's samplers run
as named: ``crsp_ops.evolve.optuna_proposer.make_sampler``), ``optuna`` (the configured
``optuna.sampler``), ``reflector``, and ``<kind>+frontier``. ``--split dev|test`` takes the data
seed and search seeds of ``benchmarks/splits.py``: choose settings on ``dev``, claim on ``test``
(declared first in ``lab/claims/``). ``--budget-curve 8 16 32`` runs every arm at each
iteration count and prints one JSON line per budget.

``--keep DIR`` keeps each search's outputs (its ``history.json`` shows every step the
search tried). ``--set`` overrides apply to every arm's search (e.g. ``evolve.max_lost_correct=0``,
``evolve.offline_length_contrast=excess``); ``--stage-set`` to building the stages.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.splits import SPLITS, evolve_split  # noqa: E402
from crsp_ops.config import load_settings, sync_params  # noqa: E402
from crsp_ops.data.financebench_synthetic import DEFAULT_MAX_REVENUE  # noqa: E402
from crsp_ops.evaluation.minibatch_grading import grading_from_settings  # noqa: E402
from crsp_ops.evaluation.paired_gains import (  # noqa: E402
    correctness_non_inferior,
    goal_met,
    paired_gains,
    seed_average_composite_gain,
)
from crsp_ops.evaluation.scoring import composite_score, shortness_score  # noqa: E402
from crsp_ops.evolve.heldout import INTERVAL_LEVEL  # noqa: E402
from crsp_ops.evolve.inputs import (  # noqa: E402
    load_cluster_inputs,
    load_initial_deltas,
    load_pool_and_heldout,
)
from crsp_ops.evolve.loop import LoopConfig, run_evolution  # noqa: E402
from crsp_ops.evolve.minibatch import run_minibatch  # noqa: E402
from crsp_ops.evolve.proposer_factory import build_proposer  # noqa: E402
from crsp_ops.evolve.reflector import reply_validity  # noqa: E402
from crsp_ops.evolve.store import EvolutionStore  # noqa: E402
from crsp_ops.inference.open_backend import (  # noqa: E402
    open_backend,
    prompt_template,
    sampling_params,
)
from crsp_ops.models.comparison_keys import rows_sha256  # noqa: E402
from crsp_ops.paths import copy_config_tree  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PROJECT = Path(tempfile.gettempdir()) / "crsp_evolve_heldout"
DEFAULT_ARMS = ["offline", "tpe", "cmaes", "random"]
SAMPLER_ARMS = ("tpe", "cmaes", "random")  # Optuna with this sampler


def arm_proposer(arm: str, settings: Any, seed: int, iterations: int) -> tuple[str, Any]:
    """The proposer kind of ``arm`` and its settings: seeded, the sampler named by the arm.

    ``cmaes+frontier`` → ``optuna`` with ``optuna.sampler=cmaes``; ``optuna`` keeps the
    configured sampler; ``iterations`` is the search's budget (TPE's startup is fitted to it).
    """
    kind = arm.partition("+")[0]
    sampler = kind if kind in SAMPLER_ARMS else settings.optuna.sampler
    return ("optuna" if kind in SAMPLER_ARMS else kind), replace(
        settings, optuna=replace(settings.optuna, seed=seed, sampler=sampler),
        evolve=replace(settings.evolve, iterations=iterations))

Columns = tuple[list[float], list[bool]]  # (response tokens, correct) per held-out question


def build_project(project: Path, converted: Path, stage_overrides: list[str]) -> Path:
    """Stage outputs of the profile under ``project`` (built once; ``.stages_done`` marks it).

    Raises:
        SystemExit: ``project`` was built with other stage overrides (another held-out size).
    """
    done = project / ".stages_done"
    project.mkdir(parents=True, exist_ok=True)
    copy_config_tree(REPO, project)
    sync_params(project)
    if done.exists():
        built = json.loads(done.read_text())["stage_overrides"]
        if built != stage_overrides:
            raise SystemExit(f"{project} was built with {built}, not {stage_overrides}: pass "
                             "another --project (or remove it)")
        return project
    env = {**os.environ, "CRSP_OPS_ROOT": str(project), "HF_HUB_OFFLINE": "1"}
    stages = (["financebench"],
              ["base-model", "--converted", str(converted), "--out", "models/base"],
              ["clusters", "--model", "models/base", "--out", "outputs/clusters", "--no-progress"],
              ["deltas", "--clusters", "outputs/clusters", "--out",
               "outputs/deltas/deltas_initial.json"])
    sets = [arg for item in ["tracking.enabled=n", *stage_overrides] for arg in ("--set", item)]
    for stage in stages:
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "crsp_ops.cli", *stage, *sets], cwd=project,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"# stage {stage[0]}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    done.write_text(json.dumps({"stage_overrides": stage_overrides}) + "\n")
    return project


def columns(result: Any) -> Columns:
    """Response tokens and correctness of a held-out result, in question order."""
    return ([float(r.response_tokens) for r in result.records],
            [bool(r.is_correct) for r in result.records])


def arm_row(seed: int, arm: str, initial: Columns, best: Columns, weights: Any,
            **extra: Any) -> dict[str, Any]:
    """One table row: the best deltas' held-out scores and their paired gains over initial."""
    gains = paired_gains(*initial, *best, weights=weights, confidence=INTERVAL_LEVEL)
    tokens, correct = best
    return {
        "seed": seed, "arm": arm, **extra,
        "mean_tokens": round(sum(tokens) / len(tokens), 2),
        "correctness": round(sum(correct) / len(correct), 4),
        "composite": round(_composite(best, weights), 4),
        "tokens_change": _rounded(gains.tokens), "correctness_gain": _rounded(gains.correctness),
        "composite_gain": _rounded(gains.composite),
        "non_inferior": correctness_non_inferior(gains.correctness.low),
        "goal_met": goal_met(gains),
    }


def arm_table(arm: str, rows: list[dict[str, Any]]) -> str:
    """A markdown table of one arm over the seeds, and a seed-average row.

    >>> row = {"seed": 0, "mean_tokens": 36.0, "tokens_change": [-0.231, -0.27, -0.19],
    ...        "correctness": 0.14, "correctness_gain": [-0.01, -0.02, 0.01],
    ...        "composite": 0.346, "composite_gain": [0.031, 0.012, 0.05], "non_inferior": True,
    ...        "goal_met": True, "answers_generated": 120, "best_iteration": 5, "search_s": 610}
    >>> print(arm_table("offline", [row]))
    ### offline
    | seed | mean tokens (change [95% CI]) | correctness (gain [95% CI]) | composite (gain [95% CI]) | non-inferior | goal | answers | best it. | search s |
    |---|---|---|---|---|---|---|---|---|
    | 0 | 36.0 (-23% [-27%, -19%]) | 0.140 (-0.01 [-0.02, +0.01]) | 0.3460 (+0.031 [+0.012, +0.050]) | yes | yes | 120 | 5 | 610 |
    | mean | 36.0 (-23%) | 0.140 (-0.01) | 0.3460 (+0.031) | 1/1 | 1/1 | 120 | | 610 |
    """  # noqa: E501
    head = ("| seed | mean tokens (change [95% CI]) | correctness (gain [95% CI]) | composite "
            "(gain [95% CI]) | non-inferior | goal | answers | best it. | search s |\n"
            "|---|---|---|---|---|---|---|---|---|")
    lines = [f"### {arm}", head]
    for r in rows:
        t, c, g = r["tokens_change"], r["correctness_gain"], r["composite_gain"]
        lines.append(
            f"| {r['seed']} | {r['mean_tokens']:.1f} ({100 * t[0]:+.0f}% [{100 * t[1]:+.0f}%, "
            f"{100 * t[2]:+.0f}%]) | {r['correctness']:.3f} ({c[0]:+.2f} [{c[1]:+.2f}, "
            f"{c[2]:+.2f}]) | {r['composite']:.4f} ({g[0]:+.3f} [{g[1]:+.3f}, {g[2]:+.3f}]) | "
            f"{_yes(r['non_inferior'])} | {_yes(r['goal_met'])} | {r['answers_generated']} | "
            f"{r['best_iteration']} | {r['search_s']:.0f} |")

    def mean(key: str, index: int | None = None) -> float:
        values = [r[key] if index is None else r[key][index] for r in rows]
        return sum(values) / len(values)

    n = len(rows)
    lines.append(
        f"| mean | {mean('mean_tokens'):.1f} ({100 * mean('tokens_change', 0):+.0f}%) | "
        f"{mean('correctness'):.3f} ({mean('correctness_gain', 0):+.2f}) | "
        f"{mean('composite'):.4f} ({mean('composite_gain', 0):+.3f}) | "
        f"{sum(r['non_inferior'] for r in rows)}/{n} | {sum(r['goal_met'] for r in rows)}/{n} | "
        f"{mean('answers_generated'):.0f} | | {mean('search_s'):.0f} |")
    return "\n".join(lines)


def _key(deltas: dict[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((str(k), float(v)) for k, v in deltas.items()))


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _rounded(estimate: Any) -> list[float]:
    return [round(estimate.value, 4), round(estimate.low, 4), round(estimate.high, 4)]


def _composite(cols: Columns, weights: Any) -> float:
    """The composite of held-out answers, exactly as ``score_records`` computes it."""
    tokens, correct = cols
    short = shortness_score(sum(tokens) / len(tokens), scale=weights.shortness_scale)
    return composite_score(short, sum(correct) / len(correct), w_short=weights.shortness_weight,
                           w_correct=weights.correctness_weight)


def reflector_stats(history: list[Any]) -> dict[str, Any]:
    """Validity rate (schema-valid replies / requests) and reflector seconds per iteration.

    Empty for arms that made no reflector request.

    >>> from types import SimpleNamespace as R
    >>> reflector_stats([R(proposer_metrics={"reflector_attempts": 2.0, "reflector_latency_s": 6.0,
    ...     "reflector_invalid_replies": 1.0}, proposal_failed=False)] * 2)["validity_rate"]
    0.5
    """
    metrics = [row.proposer_metrics for row in history]
    valid, requests = reply_validity(history)
    if not requests:
        return {}
    return {"reflector_requests": requests, "reflector_valid_replies": valid,
            "validity_rate": round(valid / requests, 4),
            "reflector_s_per_iteration": round(
                sum(m.get("reflector_latency_s", 0.0) for m in metrics) / len(metrics), 2),
            "failed_proposals": sum(bool(row.proposal_failed) for row in history),
            "prompt_cuts": int(sum(m.get("reflector_prompt_cut", 0.0) for m in metrics))}


def run_arms(*, arms: list[str], seeds: list[int], evaluate: Any, pool: list[Any],
             heldout: list[Any], initial: dict[str, float], clusters: Any, settings: Any,
             config: LoopConfig, workdir: Path, tokenize: Any,
             ) -> tuple[Columns, list[dict[str, Any]], dict[tuple[str, int], Columns]]:
    """Search with every arm and seed, score each best on ``heldout``; the rows and answers.

    Every arm gets ``config`` (its ``max_rollouts`` is the shared answer budget), with the seed
    as the minibatch and Optuna sampler seed; ``evaluate(examples, deltas)`` generates. Each
    row records the arm's sampler and how many of its trials came from the sampler's model.
    """
    weights = grading_from_settings(settings.scoring).weights
    initial_cols = columns(evaluate(heldout, initial))
    scored = {_key(initial): initial_cols}  # greedy decoding: equal deltas answer alike
    rows, answers = [], {}
    for seed in seeds:
        for arm in arms:
            mode = arm.partition("+")[2]
            kind, run_settings = arm_proposer(arm, settings, seed, config.iterations)
            out = workdir / f"{arm}-{seed}"
            proposer = build_proposer(
                kind, run_settings, token_clusters=clusters.token_clusters,
                n_clusters=clusters.n_clusters, initial_deltas=initial, out_dir=out,
                tokenize=tokenize)
            searched = time.perf_counter()
            outcome = run_evolution(
                pool=pool, evaluate=evaluate, proposer=proposer, initial_deltas=initial,
                store=EvolutionStore(out, clusters.token_clusters, clusters.n_clusters),
                cluster_descriptions=clusters.descriptions,
                config=replace(config, seed=seed, frontier=mode == "frontier"))
            search_s = time.perf_counter() - searched
            key = _key(outcome.best_deltas)
            if key not in scored:
                scored[key] = columns(evaluate(heldout, outcome.best_deltas))
            best_cols = scored[key]
            answers[arm, seed] = best_cols
            row = arm_row(seed, arm, initial_cols, best_cols, weights,
                          best_iteration=outcome.best_iteration,
                          iterations_run=len(outcome.history),
                          answers_generated=outcome.answers_generated,
                          sampler=run_settings.optuna.sampler if kind == "optuna" else None,
                          model_based_trials=sum(
                              r.proposer_metrics.get("optuna_model_based", 0.0) == 1.0
                              for r in outcome.history),
                          search_s=round(search_s, 1),
                          heldout_s=round(time.perf_counter() - searched - search_s, 1),
                          **reflector_stats(outcome.history))
            rows.append(row)
            print(f"# {json.dumps(row)}", file=sys.stderr)
    return initial_cols, rows, answers


def report(*, arms: list[str], seeds: list[int], heldout_sha256: str, initial_cols: Columns,
           rows: list[dict[str, Any]], answers: dict[tuple[str, int], Columns], weights: Any,
           config: LoopConfig, extra: dict[str, Any], started: float) -> dict[str, Any]:
    """Print the per-arm tables and comparisons on stderr; the JSON summary.

    ``config.max_rollouts`` is the answer budget every search had; ``extra`` joins the JSON.
    """
    base = arm_row(-1, "initial", initial_cols, initial_cols, weights)
    comparisons = {
        f"{arms[0]} - {other}": _rounded(seed_average_composite_gain(
            [(*answers[arms[0], s], *answers[other, s]) for s in seeds], weights=weights))
        for other in arms[1:]}
    elapsed = time.perf_counter() - started
    n = len(initial_cols[0])
    print(f"\nheld-out: {n} questions, sha256 {heldout_sha256}; initial deltas: "
          f"{base['mean_tokens']:.1f} tokens, correctness {base['correctness']:.3f}, composite "
          f"{base['composite']:.4f}; {config.iterations} iterations x minibatch "
          f"{config.minibatch_size}, budget {config.max_rollouts} answers per search; seeds "
          f"{seeds}", file=sys.stderr)
    initial_row = {**base, "seed": "all", "answers_generated": 0, "best_iteration": "-",
                   "search_s": 0.0}
    print("\n" + arm_table("initial", [initial_row]), file=sys.stderr)
    for arm in arms:
        print("\n" + arm_table(arm, [r for r in rows if r["arm"] == arm]), file=sys.stderr)
        for r in rows:
            if r["arm"] == arm and "validity_rate" in r:
                print(f"seed {r['seed']}: reflector validity {r['reflector_valid_replies']}/"
                      f"{r['reflector_requests']} ({r['validity_rate']:.0%}), "
                      f"{r['reflector_s_per_iteration']:.1f} s/iteration, "
                      f"{r['failed_proposals']} failed proposals, {r['prompt_cuts']} prompt cuts",
                      file=sys.stderr)
    for name, (value, low, high) in comparisons.items():
        print(f"\n{name}: seed-average held-out composite {value:+.4f} [{low:+.4f}, {high:+.4f}] "
              "(paired over questions)", file=sys.stderr)
    print(f"\nwall time: {elapsed:.0f} s", file=sys.stderr)
    return {
        "benchmark": "evolve_heldout", **extra, "seeds": seeds, "arms": arms,
        "iterations": config.iterations, "minibatch_size": config.minibatch_size,
        "paired_best": config.paired_best, "max_lost_correct": config.max_lost_correct,
        "answer_budget": config.max_rollouts, "heldout_questions": n,
        "heldout_sha256": heldout_sha256,
        "initial": {k: base[k] for k in ("mean_tokens", "correctness", "composite")},
        "runs": rows, "composite_first_minus_other_seed_average": comparisons,
        "goal_met": {arm: sum(r["goal_met"] for r in rows if r["arm"] == arm) for arm in arms},
        "elapsed_s": round(elapsed, 1)}

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--converted", type=Path, required=True,
                        help="HF model dir written by convert-model (or any HF model dir)")
    parser.add_argument("--project", type=Path, default=DEFAULT_PROJECT)
    parser.add_argument("--split", choices=SPLITS, default=None,
                        help="the data seed and search seeds of benchmarks/splits.py (dev: "
                             "choosing settings; test: claims); default: dev's, unlabelled")
    parser.add_argument("--seeds", type=int, nargs="+", default=None,
                        help="search seeds (default: the split's; a subset of them with --split)")
    parser.add_argument("--iterations", type=int, default=0,
                        help="iterations per search (0: evolve.iterations, the default)")
    parser.add_argument("--budget-curve", type=int, nargs="+", default=None, metavar="N",
                        help="run every arm at each of these iteration counts (e.g. 8 16 32); "
                             "one JSON line per budget")
    parser.add_argument("--heldout", type=int, default=400,
                        help="held-out questions (the financebench split is built this size)")
    parser.add_argument("--proposers", nargs="+", default=DEFAULT_ARMS,
                        help="arms: offline, optuna, reflector, or <kind>+frontier (Pareto "
                             "frontier of deltas); reflector joins when OPENAI_BASE_URL is set; "
                             "the first arm is compared with every other")
    parser.add_argument("--max-rollouts", type=int, default=0,
                        help="answers generated per search (0: the default proposer's budget, "
                             "LoopConfig.answer_budget of the iterations and minibatch size)")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--stage-set", dest="stage_overrides", action="append", default=[])
    parser.add_argument("--keep", type=Path, default=None,
                        help="keep every search's outputs (history.json, best deltas, proposer "
                             "state) under DIR/<arm>-<seed> instead of a temporary directory")
    args = parser.parse_args()
    split = evolve_split(args.split or "dev")
    if args.seeds is None:
        args.seeds = list(split.search_seeds)
    elif args.split and not set(args.seeds) <= set(split.search_seeds):
        parser.error(f"--split {args.split} searches with seeds {list(split.search_seeds)} "
                     f"(benchmarks/splits.py); {args.seeds} is not a subset of them")
    if any(n < 1 for n in args.budget_curve or []):
        parser.error("--budget-curve iteration counts must be >= 1")

    started = time.perf_counter()
    stage_overrides = ["model.source=smollm2", f"financebench.heldout_size={args.heldout}",
                       f"financebench.synthetic_max_revenue={DEFAULT_MAX_REVENUE}",
                       *(split.stage_overrides() if args.split else []),
                       *args.stage_overrides]
    project = build_project(args.project, args.converted.resolve(), stage_overrides)
    os.environ["CRSP_OPS_ROOT"] = str(project)
    arms = list(args.proposers)
    overrides = ["tracking.enabled=n", *stage_overrides, *args.overrides]
    if os.environ.get("OPENAI_BASE_URL"):
        arms += [] if "reflector" in arms else ["reflector"]
        overrides.append(f"reflector.base_url={os.environ['OPENAI_BASE_URL']}")
    settings = load_settings(project, overrides, env={}).settings
    weights = grading_from_settings(settings.scoring).weights
    clusters = load_cluster_inputs(project / "outputs/clusters")
    initial = load_initial_deltas(project / "outputs/deltas/deltas_initial.json",
                                  clusters.n_clusters)
    pool, heldout = load_pool_and_heldout(project / "data/financebench", heldout_size=0, seed=0)
    if len(heldout) < args.heldout:
        raise SystemExit(f"the held-out split has {len(heldout)} questions, not {args.heldout}")
    heldout = list(heldout[: args.heldout])
    evolve = settings.evolve
    base_config = LoopConfig(
        iterations=args.iterations or evolve.iterations, minibatch_size=evolve.minibatch_size,
        seed=0, stop_on_failure=False, paired_best=evolve.paired_best,
        max_lost_correct=evolve.max_lost_correct, acceptance=evolve.acceptance)
    curve = args.budget_curve or [base_config.iterations]
    configs = [replace(base_config, iterations=n) for n in curve]
    configs = [replace(c, max_rollouts=args.max_rollouts or c.answer_budget()) for c in configs]
    runs = len(arms) * len(args.seeds)
    print(f"# {len(heldout)} held-out questions (sha256 {rows_sha256(heldout)[:12]}), "
          f"{runs * len(configs)} searches of <= {[c.max_rollouts for c in configs]} answers",
          file=sys.stderr)
    with open_backend(settings, project / "models/base", project / "outputs/clusters") as backend:
        generate = partial(run_minibatch, backend=backend, template=prompt_template(settings),
                           sampling=sampling_params(settings),
                           grade=grading_from_settings(settings.scoring))
        with contextlib.ExitStack() as stack:
            tmp = Path(args.keep or stack.enter_context(tempfile.TemporaryDirectory()))
            for config in configs:
                budget_started = time.perf_counter()
                initial_cols, rows, answers = run_arms(
                    arms=arms, seeds=args.seeds, evaluate=lambda ex, d: generate(ex, deltas=d),
                    pool=pool, heldout=heldout, initial=initial, clusters=clusters,
                    settings=settings, config=config,
                    workdir=tmp / f"it{config.iterations}" if args.budget_curve else tmp,
                    tokenize=lambda text: backend.tokenizer(
                        text, add_special_tokens=False)["input_ids"])
                print(json.dumps(report(
                    arms=arms, seeds=args.seeds, heldout_sha256=rows_sha256(heldout),
                    initial_cols=initial_cols, rows=rows, answers=answers, weights=weights,
                    config=config, started=budget_started if args.budget_curve else started,
                    extra={"model": str(args.converted), "split": args.split,
                           "financebench_seed": settings.financebench.seed,
                           "overrides": args.overrides,
                           **({"budget_curve": curve} if args.budget_curve else {}),
                           "offline_length_contrast": evolve.offline_length_contrast,
                           "max_new_tokens": settings.generation.max_new_tokens})), flush=True)


if __name__ == "__main__":
    main()
