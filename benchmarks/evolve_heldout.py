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

Per arm it prints one table over the seeds (``benchmarks/evolve_heldout_report.py``: paired
gains over the initial deltas with 95% intervals, the correctness non-inferiority verdict,
issue 26's goal, answers generated, wall time), then the seed-averaged composite of the first
arm minus each other arm, paired over questions. One JSON line goes to stdout.

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
from typing import Any, NamedTuple

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from benchmarks.evolve_heldout_report import (  # noqa: E402
    Columns,
    arm_row,
    columns,
    reflector_stats,
    report,
)
from benchmarks.splits import SPLITS, evolve_split  # noqa: E402
from crsp_ops.config import load_settings, sync_params  # noqa: E402
from crsp_ops.data.financebench_synthetic import DEFAULT_MAX_REVENUE  # noqa: E402
from crsp_ops.evaluation.minibatch_grading import grading_from_settings  # noqa: E402
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


def _key(deltas: dict[str, float]) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((str(k), float(v)) for k, v in deltas.items()))


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


def parse_args() -> argparse.Namespace:
    """The command line; ``--seeds`` defaults to the split's search seeds."""
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
    return args


def stage_overrides_of(args: argparse.Namespace) -> list[str]:
    """The stages' overrides: the SmolLM2 profile, the held-out size, the split's data seed."""
    return ["model.source=smollm2", f"financebench.heldout_size={args.heldout}",
            f"financebench.synthetic_max_revenue={DEFAULT_MAX_REVENUE}",
            *(evolve_split(args.split).stage_overrides() if args.split else []),
            *args.stage_overrides]


def arms_and_overrides(args: argparse.Namespace,
                       stage_overrides: list[str]) -> tuple[list[str], list[str]]:
    """The arms (the reflector joins when ``OPENAI_BASE_URL`` is set), the searches' overrides."""
    arms = list(args.proposers)
    overrides = ["tracking.enabled=n", *stage_overrides, *args.overrides]
    if os.environ.get("OPENAI_BASE_URL"):
        arms += [] if "reflector" in arms else ["reflector"]
        overrides.append(f"reflector.base_url={os.environ['OPENAI_BASE_URL']}")
    return arms, overrides


class SearchInputs(NamedTuple):
    """What every search starts from: the built project's clusters, deltas and questions."""

    clusters: Any
    initial: dict[str, float]
    pool: list[Any]
    heldout: list[Any]


def load_search_inputs(project: Path, heldout_size: int) -> SearchInputs:
    """The project's clusters and initial deltas, the pool, the first ``heldout_size`` held out.

    Raises:
        SystemExit: the held-out split has fewer questions.
    """
    clusters = load_cluster_inputs(project / "outputs/clusters")
    initial = load_initial_deltas(project / "outputs/deltas/deltas_initial.json",
                                  clusters.n_clusters)
    pool, heldout = load_pool_and_heldout(project / "data/financebench", heldout_size=0, seed=0)
    if len(heldout) < heldout_size:
        raise SystemExit(f"the held-out split has {len(heldout)} questions, not {heldout_size}")
    return SearchInputs(clusters, initial, pool, list(heldout[: heldout_size]))


def search_configs(args: argparse.Namespace, evolve: Any) -> list[LoopConfig]:
    """One loop config per budget (each ``--budget-curve`` count, else the one iteration count)."""
    base_config = LoopConfig(
        iterations=args.iterations or evolve.iterations, minibatch_size=evolve.minibatch_size,
        seed=0, stop_on_failure=False, paired_best=evolve.paired_best,
        max_lost_correct=evolve.max_lost_correct, acceptance=evolve.acceptance)
    curve = args.budget_curve or [base_config.iterations]
    configs = [replace(base_config, iterations=n) for n in curve]
    return [replace(c, max_rollouts=args.max_rollouts or c.answer_budget()) for c in configs]


def report_extra(args: argparse.Namespace, settings: Any) -> dict[str, Any]:
    """What each JSON line records beside the results: the model, split and settings used."""
    return {"model": str(args.converted), "split": args.split,
            "financebench_seed": settings.financebench.seed,
            "overrides": args.overrides,
            **({"budget_curve": args.budget_curve} if args.budget_curve else {}),
            "offline_length_contrast": settings.evolve.offline_length_contrast,
            "max_new_tokens": settings.generation.max_new_tokens}


def run_budgets(args: argparse.Namespace, *, arms: list[str], settings: Any, project: Path,
                inputs: SearchInputs, configs: list[LoopConfig], started: float) -> None:
    """Every arm and seed at each budget on one backend; one JSON line per budget on stdout."""
    weights = grading_from_settings(settings.scoring).weights
    heldout = inputs.heldout
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
                    pool=inputs.pool, heldout=heldout, initial=inputs.initial,
                    clusters=inputs.clusters, settings=settings, config=config,
                    workdir=tmp / f"it{config.iterations}" if args.budget_curve else tmp,
                    tokenize=lambda text: backend.tokenizer(
                        text, add_special_tokens=False)["input_ids"])
                print(json.dumps(report(
                    arms=arms, seeds=args.seeds, heldout_sha256=rows_sha256(heldout),
                    initial_cols=initial_cols, rows=rows, answers=answers, weights=weights,
                    config=config, started=budget_started if args.budget_curve else started,
                    extra=report_extra(args, settings))), flush=True)


def main() -> None:
    args = parse_args()
    started = time.perf_counter()
    stage_overrides = stage_overrides_of(args)
    project = build_project(args.project, args.converted.resolve(), stage_overrides)
    os.environ["CRSP_OPS_ROOT"] = str(project)
    arms, overrides = arms_and_overrides(args, stage_overrides)
    settings = load_settings(project, overrides, env={}).settings
    inputs = load_search_inputs(project, args.heldout)
    configs = search_configs(args, settings.evolve)
    runs = len(arms) * len(args.seeds)
    print(f"# {len(inputs.heldout)} held-out questions (sha256 "
          f"{rows_sha256(inputs.heldout)[:12]}), {runs * len(configs)} searches of <= "
          f"{[c.max_rollouts for c in configs]} answers", file=sys.stderr)
    run_budgets(args, arms=arms, settings=settings, project=project, inputs=inputs,
                configs=configs, started=started)


if __name__ == "__main__":
    main()
