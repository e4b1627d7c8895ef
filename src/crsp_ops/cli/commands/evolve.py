"""Evolve per-cluster steering deltas: minibatch → grade → score → propose, tracked in MLflow.

Runs on the embedded defaults (tiny model, offline proposer) on a CPU in minutes:

    crsp-ops evolve
    crsp-ops evolve --set evolve.iterations=3 --set evolve.minibatch_size=4
    crsp-ops evolve --set reflector.base_url=https://api.openai.com/v1   # the LLM reflector
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 crsp-ops evolve            # the same, from the env
    crsp-ops evolve --resume outputs/evolution                          # after Ctrl+C
    mlflow run . -e evolve --env-manager local

Outputs (``--out``): deltas_current.json, deltas_best.json, processor_best.py, history.json,
evolution_lengths.png, evolving_summary.md, reflector/iter_NNN/*, heldout.json, metrics.json,
state.json (resume) and mlflow_run.json (the run(s) that produced them).
"""

from __future__ import annotations

import argparse
import sys

from crsp_ops.cli.entry import stage_main
from crsp_ops.openai_client import effective_base_url
from crsp_ops.paths import BASE_MODEL_DIR, CLUSTERS_DIR, FINANCEBENCH_DIR, INITIAL_DELTAS
from crsp_ops.tracking.run_tags import run_name, ui_path

HELP = "evolve steering deltas (reflector, Optuna or offline proposer), tracked in MLflow"

JOB = "evolve"


def add_arguments(
    parser: argparse.ArgumentParser, *, default_out: str = "outputs/evolution"
) -> None:
    """Add the evolve arguments (paths are relative to the project root)."""
    parser.add_argument("--model", default=str(BASE_MODEL_DIR), help="model directory")
    parser.add_argument("--clusters", default=str(CLUSTERS_DIR), help="clusters stage output")
    parser.add_argument("--deltas", default=str(INITIAL_DELTAS),
                        help="initial deltas JSON")
    parser.add_argument("--pool", default=str(FINANCEBENCH_DIR),
                        help="financebench stage dir (pool.jsonl + heldout.jsonl) or a JSONL file")
    parser.add_argument(
        "--out", default=default_out,
        help="output directory; 'auto' = outputs/evolution_runs/<MLflow run id or time>",
    )
    parser.add_argument("--resume", metavar="DIR", default=None,
                        help="continue the run recorded in DIR (its --out); '' = a new run")
    parser.add_argument("--overwrite", action="store_true",
                        help="delete a run already recorded in --out first (DVC stage)")


def run(args: argparse.Namespace, *, forced_proposer: str | None = None) -> int:
    """Run (or resume) one evolution job."""
    import logging
    import sys

    from crsp_ops.config import load_settings
    from crsp_ops.evolve.loop import ProposalFailedError
    from crsp_ops.evolve.preflight import check_job_inputs, check_reflector
    from crsp_ops.evolve.proposer import resolve_proposer_kind
    from crsp_ops.evolve.session import JobPaths, check_output_dir, run_job
    from crsp_ops.paths import project_root
    from crsp_ops.tracking import start_run, tracking_uri

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    root = project_root()
    overrides = list(args.overrides)
    if forced_proposer:
        overrides.append(f"evolve.proposer={forced_proposer}")
    resolved = load_settings(root, overrides)
    settings = resolved.settings
    args.resume = args.resume or None  # MLproject passes '' for "no resume"
    out = root / (args.resume or _resolve_out(args.out))
    paths = JobPaths(
        model_dir=root / args.model, clusters_dir=root / args.clusters,
        initial_deltas=root / args.deltas, pool=root / args.pool, out_dir=out,
        resume=args.resume is not None,
    )
    if args.overwrite and not paths.resume and out.is_dir():
        import shutil

        shutil.rmtree(out)
    try:
        check_output_dir(out, resume=paths.resume)
    except (FileExistsError, FileNotFoundError) as error:
        print(f"crsp-ops {JOB}: {error}", file=sys.stderr)
        return 2
    check_job_inputs(paths, settings)  # a bad input fails here, before a run is opened
    kind = resolve_proposer_kind(settings.evolve.proposer,
                                 reflector_base_url=effective_base_url(settings.reflector.base_url))
    if kind == "reflector":
        check_reflector(settings)  # an unreachable server or unknown model: before the run
    uri = tracking_uri(resolved) if settings.tracking.enabled else None
    tags = {**run_tags(settings, kind), "crsp.out_dir": str(out)}
    if paths.resume:
        tags["crsp.resumed"] = "true"
    try:
        with start_run(JOB, resolved, run_name=evolve_run_name(settings, kind), tags=tags,
                       owner_tag="crsp.out_dir") as tracker:
            result = run_job(resolved, paths, proposer_kind=kind, tracker=tracker,
                             tracking_uri=uri)
    except ProposalFailedError as error:
        print(f"crsp-ops {JOB}: stopped: {error} (evolve.on_proposal_failure=stop)",
              file=sys.stderr)
        return 1
    print(result.describe(out))
    if tracker.run_id is not None:  # the classic runs view (`make ui` serves port 5000)
        print("MLflow UI: http://127.0.0.1:5000/"
              + ui_path(tracker.experiment_id, tracker.run_id))
    return 0


def evolve_run_name(settings, kind: str) -> str:
    """``evolve-<proposer>[-<sampler>]-<model>-<N>it``, e.g. ``evolve-optuna-tpe-tiny-8it``."""
    if kind != "optuna":
        return run_name(JOB, kind, settings.model.source, f"{settings.evolve.iterations}it")
    # parallel workers of one study: the worker id tells their runs apart
    return run_name(JOB, kind, settings.optuna.sampler, settings.model.source,
                    f"{settings.evolve.iterations}it", f"w{settings.optuna.worker}")


def run_tags(settings, kind: str) -> dict[str, str]:
    """Proposer, model, budget and seed tags (columns of the runs table).

    The model fingerprint (``base_model.*``) is tagged once the model is opened.
    """
    evolve = settings.evolve
    # generations per iteration: the candidate, plus the incumbent re-scored when paired
    per_iteration = evolve.minibatch_size * (2 if evolve.paired_best else 1)
    return {
        "proposer": kind,
        "model.source": settings.model.source,
        "budget.iterations": str(evolve.iterations),
        "budget.minibatch_size": str(evolve.minibatch_size),
        "budget.max_rollouts": str(evolve.iterations * per_iteration),
        "seed": str(settings.optuna.seed if kind == "optuna" else evolve.seed),
        "evolve.frontier": str(evolve.frontier and kind != "optuna").lower(),
    } | ({"optuna.study": settings.optuna.study_name, "optuna.worker": str(settings.optuna.worker)}
         if kind == "optuna" else {})


def _resolve_out(out: str) -> str:
    """``auto`` becomes a fresh directory per run, named after the MLflow run when there is one."""
    if out != "auto":
        return out
    import os
    import time

    name = os.environ.get("MLFLOW_RUN_ID") or time.strftime("%Y%m%d-%H%M%S")
    return f"outputs/evolution_runs/{name}"


main = stage_main(sys.modules[__name__])
