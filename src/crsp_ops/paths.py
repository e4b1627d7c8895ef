"""Where the project lives and where each stage writes: the one home of the default paths.

Drivers take these as their argument defaults; dvc.yaml spells the same paths out.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from crsp_ops.errors import MissingInputError

LIMO_DIR = Path("data/limo")
FINANCEBENCH_DIR = Path("data/financebench")
CONVERTED_MODEL_DIR = Path("models/converted")
BASE_MODEL_DIR = Path("models/base")
SEEDED_MODEL_DIR = Path("models/seeded")
CRSP_MODEL_DIR = Path("models/crsp")
CLUSTERS_DIR = Path("outputs/clusters")
DELTAS_DIR = Path("outputs/deltas")
INITIAL_DELTAS = DELTAS_DIR / "deltas_initial.json"
EVOLUTION_DIR = Path("outputs/evolution")
COMPARE_DIR = Path("outputs/compare")


def project_root(start: str | os.PathLike | None = None) -> Path:
    """Find the crsp_ops project root.

    It is ``$CRSP_OPS_ROOT``, else ``$DVC_ROOT``, else the nearest parent of ``start`` (default:
    the working directory) holding a ``Kconfig`` file.

    Raises:
        MissingInputError: when no such directory exists (a ``FileNotFoundError`` the CLI
            prints as one line, exit code 2).
    """
    for variable in ("CRSP_OPS_ROOT", "DVC_ROOT"):
        value = os.environ.get(variable)
        if value and (Path(value) / "Kconfig").is_file():
            return Path(value).resolve()
    here = Path(start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "Kconfig").is_file():
            return candidate
    raise MissingInputError(
        f"not inside a crsp_ops project: no Kconfig file in {here} or its parents; run "
        "crsp-ops in the project directory or set CRSP_OPS_ROOT to it"
    )


CONFIG_TREE = ("Kconfig", "kconfig")  # the root Kconfig and the menus it includes


def copy_config_tree(source_root: Path, target_root: Path) -> None:
    """Copy the Kconfig declarations into another root (tests, benchmarks, scratch projects)."""
    for name in CONFIG_TREE:
        source = Path(source_root) / name
        if source.is_dir():
            shutil.copytree(source, Path(target_root) / name, dirs_exist_ok=True)
        else:
            shutil.copy(source, Path(target_root) / name)
