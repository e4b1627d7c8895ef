"""Which model a run trains, as TRL takes it: a directory, a Hub id, or a model in memory.

A path that exists is a model directory (or a ``model_ref.json`` directory) and is used as it
is. Any other name is a Hugging Face Hub id, read from the local cache (``HF_HUB_CACHE``, else
``HF_HOME/hub``): it is downloaded only when the caller allows it (``model.hub_download``) and
``HF_HUB_OFFLINE`` is unset. What was loaded is recorded as run tags (``ModelSource.tags``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crsp_ops.errors import MissingInputError
from crsp_ops.models.model_ref import require_model

TRUE_VALUES = {"1", "on", "true", "yes"}  # how huggingface_hub reads its boolean variables


@dataclass(frozen=True)
class ModelSource:
    """A model as the user named it, resolved on this machine."""

    kind: str  # "directory" | "hub" | "in-memory"
    name: str  # as given: a path or a Hub id; a model object's name_or_path
    directory: Path | None  # the local HF directory (a cache snapshot for a Hub id)
    revision: str = ""  # the Hub commit loaded, when known

    def tags(self) -> dict[str, str]:
        """MLflow run tags naming what was loaded.

        >>> ModelSource("hub", "org/tiny", Path("/c/snapshots/abc"), "abc").tags()["model.revision"]
        'abc'
        """
        return {"model.loaded_from": self.kind, "model.name": self.name,
                "model.path": str(self.directory or ""), "model.revision": self.revision}


def hub_cache_dir() -> Path:
    """The Hugging Face cache the environment names now (``huggingface_hub`` reads it once)."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or Path(os.environ.get("XDG_CACHE_HOME", "~/.cache"),
                                              "huggingface")
    return Path(home).expanduser() / "hub"


def hub_offline() -> bool:
    """``HF_HUB_OFFLINE`` is set to a true value."""
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in TRUE_VALUES


def resolve_model(name: str | os.PathLike, root: Path, *, allow_download: bool = False
                  ) -> ModelSource:
    """The model ``name`` names: a path (relative to ``root``) when it exists, else a Hub id.

    Raises:
        MissingInputError: neither a model directory nor a Hub model in the cache (or, when
            downloads are allowed, on the Hub), in one line naming the fix.
    """
    path = Path(root) / name
    if path.exists():
        require_model(path)
        return ModelSource("directory", str(name), path)
    download = allow_download and not hub_offline()
    snapshot = _hub_snapshot(str(name), download)
    if snapshot is None:
        how = ("(downloads are off: set model.hub_download=y and unset HF_HUB_OFFLINE, or "
               f"fetch it with `hf download {name}`)" if not download else "(not found on the Hub)")
        raise MissingInputError(
            f"model {name} does not exist: no directory {path}, and no Hugging Face model of "
            f"that id in the local cache {hub_cache_dir()} {how}; pass --model a model "
            "directory or a cached Hub id, or run the base-model stage (crsp-ops base-model)")
    require_model(snapshot)
    return ModelSource("hub", str(name), snapshot, snapshot.name)


def in_memory_source(model: Any) -> ModelSource:
    """The record of a model object (``PreTrainedModel``) handed to the trainer."""
    config = getattr(model, "config", None)
    name = getattr(model, "name_or_path", "") or type(model).__name__
    return ModelSource("in-memory", str(name), None, getattr(config, "_commit_hash", "") or "")


def _hub_snapshot(repo_id: str, download: bool) -> Path | None:
    """The local snapshot directory of ``repo_id``, fetched first when ``download``."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (
        HFValidationError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    try:
        return Path(snapshot_download(repo_id, cache_dir=hub_cache_dir(),
                                      local_files_only=not download))
    except (HFValidationError, LocalEntryNotFoundError, RepositoryNotFoundError):
        return None
