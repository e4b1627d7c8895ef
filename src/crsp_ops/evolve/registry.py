"""Register the best processor as an MLflow pyfunc model; move the alias only on a better score.

One registered model per base model (a processor steers one vocabulary); versions carry their
held-out composite and comparison keys as tags.

Design: docs/design/evolve.md#registry.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mlflow
from mlflow.exceptions import MlflowException
from mlflow.tracking._model_registry import utils as registry_utils  # the URIs _fluent_uris
from mlflow.tracking._tracking_service import utils as tracking_utils  # puts back

from crsp_ops.models.comparison_keys import RANKING_KEYS, same_basis
from crsp_ops.models.fingerprint import slug

logger = logging.getLogger(__name__)

SCORE_TAG = "heldout_composite_score"
MODEL_FILE = Path(__file__).with_name("processor_pyfunc.py")


def registered_model_name(base_name: str, model_id: str) -> str:
    """The registered model of one base model: ``<base_name>-<model id>``.

    >>> registered_model_name("crsp-steering-processor", "smollm2-b179c9523d0e")
    'crsp-steering-processor-smollm2-b179c9523d0e'
    """
    return f"{base_name}-{slug(model_id)}"


def should_move_alias(
    new_score: float, holder_score: float | None, *, comparable: bool = True
) -> bool:
    """The alias moves only to a strictly better held-out composite (or to the first version).

    A holder scored on another base model or held-out set (``comparable=False``) is never
    outranked: the scores measure different things.

    >>> should_move_alias(0.5, None), should_move_alias(0.5, 0.5), should_move_alias(0.6, 0.5)
    (True, False, True)
    >>> should_move_alias(0.9, 0.5, comparable=False)
    False
    """
    if holder_score is None:
        return True
    return comparable and new_score > holder_score


@dataclass(frozen=True)
class Registration:
    """What ``register_processor`` did."""

    name: str
    version: str
    alias_moved: bool
    holder_score: float | None  # the previous alias holder's score (None: there was none)
    reason: str  # why the alias moved or stayed


def alias_holder(client: Any, name: str, alias: str) -> tuple[float | None, dict[str, str]]:
    """Held-out composite and tags of the version holding ``alias`` (``(None, {})``: none)."""
    try:
        version = client.get_model_version_by_alias(name, alias)
    except MlflowException:
        return None, {}
    tags = dict(version.tags or {})
    score = tags.get(SCORE_TAG)
    return (float(score) if score is not None else None), tags


def register_processor(
    client: Any,
    *,
    tracking_uri: str,
    run_id: str,
    name: str,
    alias: str,
    deltas_path: Path,
    table_path: Path,
    processor_path: Path,
    heldout_composite: float,
    tags: dict[str, str],
    comparison: dict[str, str] | None = None,
) -> Registration:
    """Log the pyfunc model in run ``run_id``, register a version, maybe move the alias.

    Args:
        client: an ``MlflowClient`` on the tracking/registry URI.
        tracking_uri: that URI (MLflow's fluent API points there for this call only).
        run_id: the run the model belongs to (it must be active).
        name: registered model name.
        alias: alias to move (e.g. ``champion``).
        deltas_path: ``deltas_best.json``.
        table_path: ``token_clusters.npy``.
        processor_path: ``processor_best.py``.
        heldout_composite: the held-out composite of these deltas.
        tags: extra version tags (proposer, ...).
        comparison: the comparison keys of this run (``comparison_keys.comparison_tags``);
            the alias moves over an existing holder only when they match the holder's.
    """
    comparison = dict(comparison or {})
    prune_unfinished_versions(client, name, alias)
    holder, holder_tags = alias_holder(client, name, alias)
    comparable = holder is None or same_basis(comparison, holder_tags)
    try:
        client.get_registered_model(name)
    except Exception:  # noqa: BLE001 - MlflowException when absent
        client.create_registered_model(name)
    # fluent logging, and a database registry's look-up of the logged model, use global URIs
    with _fluent_uris(tracking_uri):
        model_uri, model_id = _log_model(run_id, deltas_path, table_path, processor_path)
        # A tracking server accepts a ``models:/m-...`` source only with the logged model's id.
        version = client.create_model_version(
            name, model_uri, run_id=run_id, model_id=model_id,
            tags={SCORE_TAG: repr(float(heldout_composite)), **comparison, **tags},
        ).version
    moved = should_move_alias(heldout_composite, holder, comparable=comparable)
    if moved:
        client.set_registered_model_alias(name, alias, version)
    if holder is None:
        reason = "first scored version"
    elif not comparable:
        differs = ", ".join(f"{k} {holder_tags.get(k)} (holder) vs {comparison.get(k)}"
                            for k in RANKING_KEYS if holder_tags.get(k) != comparison.get(k))
        reason = f"not comparable with the holder: {differs}"
    else:
        reason = f"held-out composite {heldout_composite:.4f} vs holder {holder:.4f}"
    logger.info("registered %s v%s; %s %s: %s", name, version, alias,
                "moved" if moved else "stays", reason)
    return Registration(name, str(version), moved, holder, reason)


def prune_unfinished_versions(client: Any, name: str, alias: str) -> list[str]:
    """Delete the versions of ``name`` whose run ended KILLED or FAILED; return them.

    An ``alias`` held by a deleted version moves to the best-scored version of a FINISHED run
    on the same comparison basis, or is removed when there is none. Versions of RUNNING runs
    stay (their run may still finish; a dead one is marked KILLED by the next start).
    """
    try:
        versions = client.search_model_versions(f"name = '{name}'")
    except MlflowException:
        return []
    status = {v.run_id: _run_status(client, v.run_id) for v in versions}
    dead = [v for v in versions if status[v.run_id] in UNFINISHED]
    if not dead:
        return []
    _, holder_tags = alias_holder(client, name, alias)
    holder = _alias_version(client, name, alias)
    for version in dead:
        client.delete_model_version(name, version.version)
        logger.warning("deleted %s v%s: its run %s ended %s", name, version.version,
                       version.run_id, status[version.run_id])
    if holder is not None and holder in {str(v.version) for v in dead}:
        finished = [v for v in versions if status[v.run_id] == "FINISHED"
                    and SCORE_TAG in (v.tags or {}) and same_basis(holder_tags, dict(v.tags))]
        if finished:
            best = max(finished, key=lambda v: float(v.tags[SCORE_TAG]))
            client.set_registered_model_alias(name, alias, best.version)
        else:
            _delete_alias(client, name, alias)
    return [str(v.version) for v in dead]


UNFINISHED = ("KILLED", "FAILED")


def _run_status(client: Any, run_id: str | None) -> str | None:
    if not run_id:
        return None
    try:
        return client.get_run(run_id).info.status
    except MlflowException:
        return None


def _alias_version(client: Any, name: str, alias: str) -> str | None:
    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def _delete_alias(client: Any, name: str, alias: str) -> None:
    try:
        client.delete_registered_model_alias(name, alias)
    except MlflowException:
        pass


def _log_model(
    run_id: str, deltas_path: Path, table_path: Path, processor_path: Path
) -> tuple[str, str]:
    # pyfunc.log_model logs into the active fluent run: activate ours without ending it.
    active = mlflow.active_run()
    if active is None or active.info.run_id != run_id:
        mlflow.start_run(run_id=run_id)
    try:
        info = mlflow.pyfunc.log_model(
            name="processor_model",
            python_model=str(MODEL_FILE),
            artifacts={
                "deltas": str(deltas_path),
                "token_clusters": str(table_path),
                "processor": str(processor_path),
            },
            pip_requirements=["mlflow", "numpy"],
        )
    finally:
        if active is None:
            _detach_fluent_run()
    return info.model_uri, info.model_id


URI_VARIABLES = ("MLFLOW_TRACKING_URI", "MLFLOW_REGISTRY_URI")


@contextmanager
def _fluent_uris(uri: str) -> Iterator[None]:
    """Point MLflow's fluent API at ``uri`` for the block, then put back the caller's URIs.

    ``mlflow.set_tracking_uri`` and ``set_registry_uri`` change module state and the process
    environment (for subprocesses); both are restored, so a caller's own MLflow session (a
    notebook, a test) is left as it was.
    """
    environment = {name: os.environ.get(name) for name in URI_VARIABLES}
    tracking, registry = tracking_utils._tracking_uri, registry_utils._registry_uri
    mlflow.set_tracking_uri(uri)
    mlflow.set_registry_uri(uri)
    try:
        yield
    finally:
        mlflow.set_tracking_uri(tracking)
        registry_utils._registry_uri = registry
        for name, value in environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def _detach_fluent_run() -> None:
    """Forget the fluent active run without ending it (the tracker sets the final status)."""
    from mlflow.tracking import fluent

    stack = getattr(fluent, "_active_run_stack", None)
    if stack is None:
        return
    active = stack.get() if hasattr(stack, "get") else stack
    if active:
        active.pop()
