"""Tags that tie a run to its code (git) and its data (DVC)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import yaml


def git_tags(root: Path) -> dict[str, str]:
    """``git.commit`` and ``git.dirty`` of the work tree at ``root`` (empty outside git)."""
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
    status = git("status", "--porcelain", "--untracked-files=no")
    return {"git.commit": commit, "git.dirty": str(bool(status)).lower()}


def dvc_tags(root: Path, stage: str | None = None) -> dict[str, str]:
    """Content hashes from ``dvc.lock``: the stage's inputs, or every stage's outputs.

    Under ``dvc repro`` (``$DVC_STAGE`` set) the tags are ``dvc.dep.<path>`` of that stage;
    otherwise ``dvc.out.<path>`` of every locked stage, i.e. the data versions in the workspace.
    """
    stage = stage or os.environ.get("DVC_STAGE")
    lock = root / "dvc.lock"
    if not lock.is_file():
        return {"dvc.stage": stage} if stage else {}
    try:
        stages = (yaml.safe_load(lock.read_text()) or {}).get("stages", {})
    except yaml.YAMLError:
        return {}
    tags: dict[str, str] = {}
    if stage:
        tags["dvc.stage"] = stage
        for dep in stages.get(stage, {}).get("deps", []):
            if dep.get("md5"):
                tags[f"dvc.dep.{dep['path']}"] = dep["md5"]
        return tags
    for body in stages.values():
        for out in body.get("outs", []):
            if out.get("md5"):
                tags[f"dvc.out.{out['path']}"] = out["md5"]
    return tags
