"""One evolution job end to end: inputs, backend, loop, held-out, registry, outputs, tracking.

Drivers (``crsp-ops evolve``/``optuna``) open the MLflow run and call ``run_job`` inside it; this
module wires the library pieces and does the I/O. On Ctrl+C/SIGTERM the loop flushes the best
files, ``open_backend`` stops what it started, and the ``finally`` here logs the outputs as
artifacts before the run ends KILLED.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from crsp_ops.evaluation.minibatch_grading import grading_from_settings
from crsp_ops.evolve.heldout import (
    HeldoutComparison,
    describe_heldout,
    evaluate_heldout,
    heldout_examples,
)
from crsp_ops.evolve.inputs import (
    ClusterInputs,
    load_cluster_inputs,
    load_initial_deltas,
    load_questions,
    select_pool,
)
from crsp_ops.evolve.iteration import best_composite_so_far
from crsp_ops.evolve.iteration_outputs import iteration_metrics
from crsp_ops.evolve.loop import EvolutionOutcome, LoopConfig, run_evolution
from crsp_ops.evolve.minibatch import run_minibatch
from crsp_ops.evolve.proposer_factory import build_proposer
from crsp_ops.evolve.reflector import reply_validity
from crsp_ops.evolve.registry import (
    prune_unfinished_versions,
    register_processor,
    registered_model_name,
)
from crsp_ops.evolve.store import (
    DELTAS_BEST,
    DELTAS_CURRENT,
    FRONTIER,
    HELDOUT,
    HISTORY,
    HISTORY_PLOT,
    METRICS,
    MLFLOW_RUN,
    PLOT,
    PROCESSOR_BEST,
    STATE,
    SUMMARY,
    EvolutionStore,
)
from crsp_ops.inference.open_backend import open_backend, prompt_template, sampling_params
from crsp_ops.interrupts import critical_section
from crsp_ops.models.comparison_keys import MODEL_KEY, comparison_tags
from crsp_ops.models.model_ref import load_tokenizer
from crsp_ops.tracking import Tracker

logger = logging.getLogger(__name__)

OUTPUT_FILES = (DELTAS_CURRENT, DELTAS_BEST, PROCESSOR_BEST, HISTORY, HISTORY_PLOT, SUMMARY, PLOT,
                STATE, FRONTIER,
                MLFLOW_RUN, HELDOUT, METRICS)


@dataclass(frozen=True)
class JobPaths:
    """Where a job reads and writes."""

    model_dir: Path
    clusters_dir: Path
    initial_deltas: Path
    pool: Path
    out_dir: Path
    resume: bool  # continue the run recorded in out_dir


def check_output_dir(out_dir: Path, *, resume: bool) -> None:
    """Refuse to overwrite a recorded run, and to resume a directory that holds none."""
    has_state = (out_dir / STATE).is_file()
    if resume and not has_state:
        raise FileNotFoundError(f"--resume {out_dir}: no {STATE} there, nothing to resume")
    if not resume and has_state:
        raise FileExistsError(
            f"{out_dir} already holds an evolution run ({STATE}): continue it with "
            f"--resume {out_dir}, or pass another --out (or remove the directory)"
        )


def record_mlflow_run(store: EvolutionStore, tracker: Tracker, tracking_uri: str | None) -> None:
    """Append this invocation's MLflow run to ``mlflow_run.json`` (latest first)."""
    previous = store.read_json(MLFLOW_RUN) or {"runs": []}
    runs = [r for r in previous["runs"] if r != tracker.run_id]
    store.write_json(MLFLOW_RUN, {
        "run_id": tracker.run_id,
        "experiment_id": getattr(tracker, "experiment_id", None),
        "tracking_uri": tracking_uri,
        "runs": [tracker.run_id, *runs] if tracker.run_id else runs,
    })


def replay_history(store: EvolutionStore, tracker: Tracker) -> None:
    """Log the metrics of iterations finished by an earlier invocation into this run."""
    tokens = 0.0
    history = store.read_history()
    for done, row in enumerate(history, start=1):
        tokens += row.proposer_metrics.get("reflector_total_tokens", 0.0)
        tracker.log_metrics(iteration_metrics(row, tokens, best_composite_so_far(history[:done])),
                            step=row.iteration)


def log_outputs(store: EvolutionStore, tracker: Tracker) -> None:
    """Log the output files as artifacts; never raises (it also runs while unwinding)."""
    for name in OUTPUT_FILES:
        path = store.path(name)
        if path.is_file():
            try:
                tracker.log_artifact(path)
            except Exception as error:  # noqa: BLE001 - best effort on the way out
                logger.warning("could not log %s: %s", path, error)


@dataclass(frozen=True)
class JobResult:
    """A finished evolution job: the loop's outcome and the held-out comparison."""

    outcome: EvolutionOutcome
    heldout: HeldoutComparison

    def describe(self, out_dir: Path) -> str:
        """The lines ``crsp-ops evolve`` ends with.

        The winning iteration and where the outputs are, then the held-out scores of the initial
        and best deltas.
        """
        return (f"{self.outcome.describe_best()}; outputs in {out_dir}\n"
                + describe_heldout(self.heldout.to_json()))


def run_job(
    resolved: Any, paths: JobPaths, *, proposer_kind: str, tracker: Tracker,
    tracking_uri: str | None,
) -> JobResult:
    """Run (or resume) one evolution job inside an open tracker run."""
    settings = resolved.settings
    started = time.perf_counter()
    clusters = load_cluster_inputs(paths.clusters_dir)
    initial = load_initial_deltas(paths.initial_deltas, clusters.n_clusters)
    questions = load_questions(
        paths.pool, heldout_size=settings.financebench.heldout_size,
        seed=settings.financebench.seed,
    )
    pool = select_pool(questions.pool, settings.evolve.pool_index_list)
    heldout = heldout_examples(questions.heldout, settings.evolve.heldout_size)
    tracker.log_metrics(
        {f"data_{part}_skipped_rows": float(n) for part, n in questions.skipped.items()}, step=0)
    comparison = comparison_tags(paths.model_dir, table_path=clusters.table_path,
                                 heldout_rows=heldout)
    tracker.set_tags(comparison)
    if settings.evolve.registry_enabled and tracker.run_id is not None:
        _withdraw_unfinished(settings, tracker, comparison)
    store = _open_store(paths, clusters, tracker, tracking_uri)
    proposer = build_proposer(
        proposer_kind, settings, token_clusters=clusters.token_clusters,
        n_clusters=clusters.n_clusters, initial_deltas=initial, out_dir=paths.out_dir,
        tokenize=_lazy_tokenizer(paths.model_dir),
        worker_attrs={"mlflow_run_id": tracker.run_id} if tracker.run_id else None,
    )
    tracker.log_dict(clusters.descriptions, "inputs/cluster_descriptions.json")
    tracker.log_dict(initial, "inputs/deltas_initial.json")
    try:
        grading = grading_from_settings(settings.scoring)
        with open_backend(settings, paths.model_dir, paths.clusters_dir,
                          state_dir=paths.out_dir) as backend:
            evaluate = partial(
                _evaluate, run_minibatch, backend=backend, template=prompt_template(settings),
                sampling=sampling_params(settings), grade=grading,
            )
            outcome = run_evolution(
                pool=pool, evaluate=evaluate, proposer=proposer, store=store,
                initial_deltas=initial, cluster_descriptions=clusters.descriptions,
                config=_loop_config(settings, proposer_kind), tracker=tracker,
            )
            scores = evaluate_heldout(
                evaluate, heldout, initial=outcome.initial_deltas, best=outcome.best_deltas,
                weights=grading.weights,
            )
        _finish(store, tracker, outcome, scores, proposer_kind, time.perf_counter() - started)
        if settings.evolve.registry_enabled and tracker.run_id is not None:
            with critical_section():  # log_model holds the store's lock: never torn by Ctrl+C
                _register(settings, store, clusters, tracker, tracking_uri, scores,
                          proposer_kind, comparison)
        return JobResult(outcome, scores)
    finally:
        log_outputs(store, tracker)


def _withdraw_unfinished(settings: Any, tracker: Tracker, comparison: dict[str, str]) -> None:
    """A killed run on this directory was just marked KILLED: withdraw what it registered."""
    prune_unfinished_versions(
        tracker.client,
        registered_model_name(settings.evolve.registry_model_name, comparison[MODEL_KEY]),
        settings.evolve.registry_alias,
    )


def _open_store(
    paths: JobPaths, clusters: ClusterInputs, tracker: Tracker, tracking_uri: str | None
) -> EvolutionStore:
    """The output directory, cleaned of torn writes, with this run recorded (and replayed)."""
    store = EvolutionStore(paths.out_dir, clusters.token_clusters, clusters.n_clusters)
    for stale in store.remove_stale_temp_files():
        logger.warning("removed %s, left by an interrupted write", stale)
    record_mlflow_run(store, tracker, tracking_uri)
    if paths.resume:
        replay_history(store, tracker)
    return store


def _loop_config(settings: Any, proposer_kind: str) -> LoopConfig:
    """The loop's configuration from the ``evolve`` settings."""
    return LoopConfig(
        iterations=settings.evolve.iterations,
        minibatch_size=settings.evolve.minibatch_size, seed=settings.evolve.seed,
        stop_on_failure=settings.evolve.on_proposal_failure == "stop",
        paired_best=settings.evolve.paired_best,
        max_lost_correct=settings.evolve.max_lost_correct,
        acceptance=settings.evolve.acceptance,
        # Optuna's sampler is its own search: it must be told every trial it asked
        frontier=settings.evolve.frontier and proposer_kind != "optuna",
    )


def _evaluate(run_minibatch, examples, deltas, **kwargs):
    return run_minibatch(examples, deltas=deltas, **kwargs)


def _lazy_tokenizer(model_dir: Path):
    """Tokenize answers only when records carry no token ids (loads the tokenizer once).

    The tokenizer is the one ``model_ref.json`` points at when ``model_dir`` holds one.
    """
    cache: dict[str, Any] = {}

    def tokenize(text: str) -> list[int]:
        if "tokenizer" not in cache:
            cache["tokenizer"] = load_tokenizer(model_dir)
        return cache["tokenizer"](text, add_special_tokens=False)["input_ids"]

    return tokenize


def _finish(store, tracker, outcome, heldout, proposer_kind, wall_s) -> None:
    last_step = max(len(outcome.history) - 1, 0)
    final = {
        **heldout.metrics(),
        "best_iteration": float(outcome.best_iteration),
        "iterations_completed": float(len(outcome.history)),
        "failed_proposals": float(sum(row.proposal_failed for row in outcome.history)),
        # the search's budget in generated answers (held-out scoring not included)
        "answers_generated": float(outcome.answers_generated),
        "wall_time_s": wall_s,
    }
    valid, requests = reply_validity(outcome.history)
    if requests:  # schema-valid reflector replies / requests, over the run
        final["reflector_validity_rate"] = valid / requests
    tracker.log_metrics(final, step=last_step)
    store.write_json(HELDOUT, heldout.to_json())
    store.write_json(METRICS, {
        "proposer": proposer_kind,
        # None: this worker evaluated nothing (its study's shared budget was already spent)
        "best_composite_score": outcome.best_composite if outcome.best_iteration >= 0 else None,
        "best_composite": best_composite_so_far(outcome.history),
        **{k: v for k, v in final.items() if k != "wall_time_s"},
    })
    tracker.flush()


def _register(
    settings, store, clusters, tracker, tracking_uri, heldout, proposer_kind, comparison
) -> None:

    registration = register_processor(
        tracker.client, tracking_uri=tracking_uri, run_id=tracker.run_id,
        name=registered_model_name(settings.evolve.registry_model_name, comparison[MODEL_KEY]),
        alias=settings.evolve.registry_alias, comparison=comparison,
        deltas_path=store.path(DELTAS_BEST), table_path=clusters.table_path,
        processor_path=store.path(PROCESSOR_BEST),
        heldout_composite=heldout.best["composite_score"], tags={"proposer": proposer_kind},
    )
    tracker.set_tags({
        "registry.model": registration.name, "registry.version": registration.version,
        "registry.alias_moved": str(registration.alias_moved).lower(),
        "registry.reason": registration.reason,
    })
