"""Held-out composite and correctness, with 95% bootstrap intervals, of evolved deltas on a model.

Builds (once, under ``--project``) the stage outputs of a profile with the real stage commands
(``financebench``, ``base-model``, ``clusters``, ``deltas``; the SmolLM2 profile reads the HF
directory ``convert-model`` wrote to ``--converted``), then, for every seed, evolves deltas with
the offline proposer and with Optuna (and the reflector when ``OPENAI_BASE_URL`` is set) under
the same iteration budget and minibatch draws, and scores each run's best deltas and the initial
deltas on the same held-out questions (greedy decoding). Per proposer and seed it reports the
held-out composite and correctness with percentile-bootstrap 95% intervals over questions
(``evaluation.bootstrap.bootstrap_interval``) and the *paired* difference best − initial
(questions resampled jointly). Prints a table on stderr and one JSON line on stdout.

    crsp-ops convert-model --set model.source=smollm2 --out /tmp/smollm2_hf   # once, ~1 min
    python benchmarks/evolve_heldout.py --converted /tmp/smollm2_hf --seeds 0 1 2 \
        --iterations 3 --heldout 60 [--project /tmp/crsp_evolve_heldout] \
        [--set evolve.minibatch_size=8]

``--set`` overrides apply to the evolution runs; ``--stage-set`` to building the stages.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from functools import partial
from pathlib import Path

import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from crsp_ops.config import load_settings, sync_params  # noqa: E402
from crsp_ops.evaluation.bootstrap import bootstrap_interval  # noqa: E402
from crsp_ops.evaluation.minibatch_grading import grading_from_settings  # noqa: E402
from crsp_ops.evaluation.scoring import composite_score, shortness_score  # noqa: E402
from crsp_ops.evolve.inputs import (  # noqa: E402
    load_cluster_inputs,
    load_initial_deltas,
    load_pool_and_heldout,
)
from crsp_ops.evolve.loop import LoopConfig, run_evolution  # noqa: E402
from crsp_ops.evolve.minibatch import run_minibatch  # noqa: E402
from crsp_ops.evolve.proposer_factory import build_proposer  # noqa: E402
from crsp_ops.evolve.store import EvolutionStore  # noqa: E402
from crsp_ops.inference.open_backend import (  # noqa: E402
    open_backend,
    prompt_template,
    sampling_params,
)
from crsp_ops.paths import copy_config_tree  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_PROJECT = Path(tempfile.gettempdir()) / "crsp_evolve_heldout"


def build_project(project: Path, converted: Path, stage_overrides: list[str]) -> Path:
    """Stage outputs of the profile under ``project`` (built once; ``.stages_done`` marks it)."""
    done = project / ".stages_done"
    project.mkdir(parents=True, exist_ok=True)
    copy_config_tree(REPO, project)
    sync_params(project)
    if done.exists():
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
        subprocess.run([sys.executable, "-m", "pipelines.cli", *stage, *sets], cwd=project,
                       env=env, check=True, stdout=subprocess.DEVNULL)
        print(f"# stage {stage[0]}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
    done.write_text(json.dumps({"stage_overrides": stage_overrides}) + "\n")
    return project


def per_question(result) -> np.ndarray:
    """``(n, 2)`` rows of (correct, response tokens) of a held-out result."""
    return np.array([[float(r.is_correct), float(r.response_tokens)] for r in result.records])


def composite_of(rows: np.ndarray, scoring) -> float:
    """The composite of (correct, tokens) rows, exactly as ``score_records`` computes it."""
    short = shortness_score(float(rows[:, 1].mean()), scale=scoring.shortness_scale)
    return composite_score(short, float(rows[:, 0].mean()), w_short=scoring.shortness_weight,
                           w_correct=scoring.correctness_weight)


def summarize(rows: np.ndarray, initial: np.ndarray, scoring) -> dict:
    """Composite and correctness with intervals, and the paired difference to ``initial``."""
    composite = partial(composite_of, scoring=scoring)
    paired = np.hstack([initial, rows])  # (n, 4): both deltas' answers to the same question

    def gain(both: np.ndarray) -> float:
        return composite(both[:, 2:]) - composite(both[:, :2])

    def correctness_gain(both: np.ndarray) -> float:
        return float(both[:, 2].mean() - both[:, 0].mean())

    return {
        "composite": round(composite(rows), 4),
        "composite_ci95": [round(x, 4) for x in bootstrap_interval(rows, composite)],
        "correctness": round(float(rows[:, 0].mean()), 4),
        "correctness_ci95": [round(x, 4) for x in bootstrap_interval(rows[:, 0])],
        "mean_tokens": round(float(rows[:, 1].mean()), 1),
        "gain": round(gain(paired), 4),
        "gain_ci95": [round(x, 4) for x in bootstrap_interval(paired, gain)],
        "correctness_gain": round(correctness_gain(paired), 4),
        "correctness_gain_ci95": [round(x, 4)
                                  for x in bootstrap_interval(paired, correctness_gain)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--converted", type=Path, required=True,
                        help="HF model dir written by convert-model (or any HF model dir)")
    parser.add_argument("--project", type=Path, default=DEFAULT_PROJECT)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--heldout", type=int, default=60, help="held-out questions")
    parser.add_argument("--proposers", nargs="+", default=["offline", "optuna"],
                        help="arms: offline, optuna, reflector, or <kind>+frontier (Pareto "
                             "frontier of deltas); reflector joins when OPENAI_BASE_URL is set")
    parser.add_argument("--max-rollouts", type=int, default=0,
                        help="answers generated per search (0: iterations bound it); an equal "
                             "budget for arms whose iterations generate differently")
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--stage-set", dest="stage_overrides", action="append", default=[])
    args = parser.parse_args()

    stage_overrides = ["model.source=smollm2", *args.stage_overrides]
    project = build_project(args.project, args.converted.resolve(), stage_overrides)
    os.environ["CRSP_OPS_ROOT"] = str(project)
    kinds = list(args.proposers)
    overrides = ["tracking.enabled=n", *stage_overrides, *args.overrides]
    if os.environ.get("OPENAI_BASE_URL"):
        kinds += [] if "reflector" in kinds else ["reflector"]
        overrides.append(f"reflector.base_url={os.environ['OPENAI_BASE_URL']}")
    settings = load_settings(project, overrides, env={}).settings
    clusters = load_cluster_inputs(project / "outputs/clusters")
    initial = load_initial_deltas(project / "outputs/deltas/deltas_initial.json",
                                  clusters.n_clusters)
    pool, heldout = load_pool_and_heldout(project / "data/financebench", heldout_size=0, seed=0)
    heldout = list(heldout[: args.heldout])
    started = time.perf_counter()
    table, rows_json = [], []
    with open_backend(settings, project / "models/base", project / "outputs/clusters") as backend:
        evaluate = partial(run_minibatch, backend=backend, template=prompt_template(settings),
                           sampling=sampling_params(settings),
                           grade=grading_from_settings(settings.scoring))
        initial_rows = per_question(evaluate(heldout, deltas=initial))
        base = summarize(initial_rows, initial_rows, settings.scoring)
        print(f"# initial: {json.dumps(base)}", file=sys.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            for seed in args.seeds:
                for arm in kinds:
                    kind, _, mode = arm.partition("+")
                    run_settings = replace(settings, optuna=replace(settings.optuna, seed=seed))
                    out = Path(tmp) / f"{arm}-{seed}"
                    proposer = build_proposer(
                        kind, run_settings, token_clusters=clusters.token_clusters,
                        n_clusters=clusters.n_clusters, initial_deltas=initial, out_dir=out,
                        tokenize=lambda text: backend.tokenizer(
                            text, add_special_tokens=False)["input_ids"])
                    outcome = run_evolution(
                        pool=pool, evaluate=lambda ex, deltas: evaluate(ex, deltas=deltas),
                        proposer=proposer, initial_deltas=initial,
                        store=EvolutionStore(out, clusters.token_clusters, clusters.n_clusters),
                        cluster_descriptions=clusters.descriptions,
                        config=LoopConfig(iterations=args.iterations,
                                          minibatch_size=settings.evolve.minibatch_size,
                                          seed=seed, stop_on_failure=False,
                                          paired_best=settings.evolve.paired_best,
                                          frontier=mode == "frontier",
                                          max_rollouts=args.max_rollouts))
                    rows = (initial_rows if dict(outcome.best_deltas) == dict(initial)
                            else per_question(evaluate(heldout, deltas=outcome.best_deltas)))
                    row = {"seed": seed, "proposer": arm, "best_iteration":
                           outcome.best_iteration, **summarize(rows, initial_rows,
                                                               settings.scoring)}
                    rows_json.append(row)
                    print(f"# {json.dumps(row)}", file=sys.stderr)
                    table.append(row)
    print(f"held-out: {len(heldout)} questions, {args.iterations} iterations, minibatch "
          f"{settings.evolve.minibatch_size}; initial composite {base['composite']} "
          f"{base['composite_ci95']}, correctness {base['correctness']} "
          f"{base['correctness_ci95']}", file=sys.stderr)
    for row in table:
        print(f"seed {row['seed']} {row['proposer']:>16}: composite {row['composite']:.4f} "
              f"{row['composite_ci95']} correctness {row['correctness']:.3f} "
              f"{row['correctness_ci95']} gain {row['gain']:+.4f} {row['gain_ci95']}",
              file=sys.stderr)
    print(json.dumps({
        "benchmark": "evolve_heldout", "model": str(args.converted), "seeds": args.seeds,
        "iterations": args.iterations, "minibatch_size": settings.evolve.minibatch_size,
        "heldout_questions": len(heldout), "max_new_tokens": settings.generation.max_new_tokens,
        "initial": base, "runs": rows_json,
        "goal_met_runs": sum(r["gain_ci95"][0] > 0 and r["correctness_gain"] >= 0
                             for r in rows_json),
        "elapsed_s": round(time.perf_counter() - started, 1)}))


if __name__ == "__main__":
    main()
