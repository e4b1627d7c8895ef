"""Tags that tie a run to its code (git) and its data (DVC), and how runs and experiments read.

MLflow 3 reads the view of an experiment from its kind tag (``mlflow.experimentKind``;
``custom_model_development`` is the classic runs table and charts), which every experiment of
this project carries. The 3.17 UI, whose "GenAI | Model training" switch is on, decides the view
from that switch instead (default GenAI, remembered per browser) unless the link says
``?workflowType=machine_learning``: ``ui_path`` builds such links (checked in headless
Chromium against mlflow 3.17.2).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

EXPERIMENT_KIND_TAG = "mlflow.experimentKind"
EXPERIMENT_KIND = "custom_model_development"  # MLflow 3: the classic runs table + charts view
RUN_NAME_TAG = "mlflow.runName"


def run_name(*parts: object) -> str:
    """A run name that says what ran: non-empty parts, slugged, joined by dashes.

    >>> run_name("evolve", "optuna", "tpe", "SmolLM2", "12it")
    'evolve-optuna-tpe-smollm2-12it'
    >>> run_name("train", "crsp", "", "tiny", "20steps")
    'train-crsp-tiny-20steps'
    """
    pieces = (re.sub(r"[^a-z0-9.]+", "-", str(p).lower()).strip("-") for p in parts)
    return "-".join(piece for piece in pieces if piece)


def ui_path(experiment_id: str, run_id: str | None = None) -> str:
    """The UI route (after the server's address) of an experiment's runs table, or of a run.

    >>> ui_path("3")
    '#/experiments/3/runs?workflowType=machine_learning'
    """
    page = f"runs/{run_id}" if run_id else "runs"
    return f"#/experiments/{experiment_id}/{page}?workflowType=machine_learning"


def ensure_experiment_kind(client, experiment_id: str) -> None:
    """Tag the experiment ``mlflow.experimentKind=custom_model_development`` unless it is."""
    experiment = client.get_experiment(experiment_id)
    if experiment.tags.get(EXPERIMENT_KIND_TAG) != EXPERIMENT_KIND:
        client.set_experiment_tag(experiment_id, EXPERIMENT_KIND_TAG, EXPERIMENT_KIND)


def git_tags(root: Path) -> dict[str, str]:
    """``git.commit`` and ``git.dirty`` of the work tree at ``root`` (empty outside git).

    ``dvc.lock`` does not count as dirty: every stage run rewrites it (each stage's
    ``<output>.mlflow_run.json`` names a new run), so it says nothing about the code.
    """
    def git(*args: str) -> str | None:
        try:
            done = subprocess.run(
                ["git", *args], cwd=root, capture_output=True, text=True, timeout=10
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
        return done.stdout.strip() if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    if not commit:
        return {}
    status = git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!dvc.lock")
    return {"git.commit": commit, "git.dirty": str(bool(status)).lower()}


DVC_RECORD_ARTIFACT = "dvc/hashes.json"


def dvc_record(root: Path, stage: str | None = None) -> dict[str, Any]:
    """DVC content hashes: the running stage's inputs, or every locked stage's outputs.

    Under ``dvc repro`` (``$DVC_STAGE`` set) ``{"stage": ..., "deps": {path: hash}}`` of that
    stage, hashed now by DVC itself (``dvc.lock`` still holds the previous run's hashes until the
    stage ends); otherwise ``{"outs": {path: hash}}`` from ``dvc.lock``, i.e. the data versions in
    the workspace. ``{}`` when DVC can tell nothing. The run logs it as one artifact
    (``DVC_RECORD_ARTIFACT``) and tags only a digest of it (``dvc_tags``): dozens of
    ``dvc.dep.*`` tags would bury the run's overview.
    """
    stage = stage or os.environ.get("DVC_STAGE")
    if stage:
        current = _current_dep_hashes(root, stage)
        if current is not None:
            return {"stage": stage, "deps": current}
    lock = root / "dvc.lock"
    if not lock.is_file():
        return {"stage": stage} if stage else {}
    try:
        stages = (yaml.safe_load(lock.read_text()) or {}).get("stages", {})
    except yaml.YAMLError:
        return {}
    if stage:
        return {"stage": stage, "deps": {dep["path"]: dep["md5"] for dep in
                                         stages.get(stage, {}).get("deps", []) if dep.get("md5")}}
    # not under dvc repro: what the workspace holds
    return {"outs": {out["path"]: out["md5"] for body in stages.values()
                     for out in body.get("outs", []) if out.get("md5")}}


def dvc_tags(record: dict[str, Any]) -> dict[str, str]:
    """``dvc.stage`` and one digest per hash map (``dvc.deps_sha256``, ``dvc.outs_sha256``).

    >>> dvc_tags({"stage": "evolve", "deps": {"a.py": "1"}})["dvc.stage"]
    'evolve'
    """
    tags = {"dvc.stage": record["stage"]} if record.get("stage") else {}
    for key in ("deps", "outs"):
        if record.get(key):
            text = json.dumps(record[key], sort_keys=True).encode()
            tags[f"dvc.{key}_sha256"] = hashlib.sha256(text).hexdigest()[:16]
    return tags


def _current_dep_hashes(root: Path, stage: str) -> dict[str, str] | None:
    """``{path: hash}`` of the stage's deps computed now, or ``None`` when DVC cannot tell."""
    try:
        from dvc.repo import Repo

        with Repo(str(root)) as repo:
            (found,) = repo.stage.collect(stage)
            return {
                dep.def_path: dep.get_hash().value
                for dep in found.deps
                if dep.get_hash() and dep.get_hash().value and dep.def_path != "params.yaml"
            }
    except Exception:  # DVC missing, no repo, or a stage it cannot resolve: fall back to the lock
        return None
