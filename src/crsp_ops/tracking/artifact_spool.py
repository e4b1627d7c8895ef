"""Artifacts an unreachable tracking server could not take: kept on disk, sent later.

An artifact write that fails with an outage (``outage.is_outage``) does not stop the job: the
file (or directory), already redacted, is copied to ``<spool>/mlflow_unsent_<run id>/<n>/``
and sent again when the run ends (``outage.close_run``); if the server is still away then,
its row goes to the run's ``mlflow_unsent_<run id>.jsonl`` beside the unsent metrics, and
``crsp-ops tracking-replay`` uploads it.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class UnsentArtifact:
    """One kept artifact: the local copy and where it goes in the run's artifacts."""

    local: Path  # the copy (a file or a directory) inside the spool folder
    artifact_path: str | None  # the run's artifact directory (None: its root)

    def to_row(self, run_id: str) -> dict[str, Any]:
        """The JSONL row ``replay_unsent`` reads."""
        return {"run_id": run_id, "artifact": str(self.local),
                "artifact_path": self.artifact_path}


def spool_folder(spool_dir: Path | None, run_id: str) -> Path:
    """``<spool_dir>/mlflow_unsent_<run id>`` (the system temp dir when ``spool_dir`` is None)."""
    base = Path(spool_dir) if spool_dir is not None else Path(tempfile.gettempdir())
    return base / f"mlflow_unsent_{run_id}"


def keep_artifact(path: Path, artifact_path: str | None, folder: Path) -> UnsentArtifact:
    """Copy ``path`` into a fresh numbered slot of ``folder`` (the original may be temporary)."""
    folder.mkdir(parents=True, exist_ok=True)
    slot = folder / str(sum(1 for _ in folder.iterdir()))
    slot.mkdir()
    local = slot / path.name
    if path.is_dir():
        shutil.copytree(path, local)
    else:
        shutil.copy2(path, local)
    return UnsentArtifact(local, artifact_path)


def send_artifact(client: Any, run_id: str, item: UnsentArtifact) -> None:
    """Upload one kept artifact, then delete its copy (and the spool folder once empty)."""
    if item.local.is_dir():
        client.log_artifacts(run_id, str(item.local), item.artifact_path)
    else:
        client.log_artifact(run_id, str(item.local), item.artifact_path)
    slot = item.local.parent
    shutil.rmtree(slot)
    if not any(slot.parent.iterdir()):
        slot.parent.rmdir()
