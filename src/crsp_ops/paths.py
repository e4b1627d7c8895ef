"""Where the project lives and where each stage writes (the layout dvc.yaml declares)."""

from __future__ import annotations

import os
from pathlib import Path

LIMO_DIR = Path("data/limo")
FINANCEBENCH_DIR = Path("data/financebench")
BASE_MODEL_DIR = Path("models/base")


def project_root(start: str | os.PathLike | None = None) -> Path:
    """The crsp_ops project root: ``$CRSP_OPS_ROOT``, ``$DVC_ROOT``, or the nearest parent of
    ``start`` (default: the working directory) holding a ``Kconfig`` file.

    Raises:
        FileNotFoundError: when no such directory exists.
    """
    for variable in ("CRSP_OPS_ROOT", "DVC_ROOT"):
        value = os.environ.get(variable)
        if value and (Path(value) / "Kconfig").is_file():
            return Path(value).resolve()
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Kconfig").is_file():
            return candidate
    raise FileNotFoundError(
        f"no Kconfig found in {here} or its parents: run crsp-ops inside a crsp_ops project "
        "(or set CRSP_OPS_ROOT)"
    )
