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

# What the package carries: the Kconfig tree, the configs/ profiles, the files `crsp-ops init`
# writes. A project's own Kconfig sources PACKAGED_KCONFIG through $CRSP_OPS_KCONFIG.
PACKAGE_DEFAULTS = Path(__file__).resolve().parent / "defaults"
PACKAGED_KCONFIG = PACKAGE_DEFAULTS / "Kconfig"
PACKAGED_CONFIGS = PACKAGE_DEFAULTS / "configs"
PROJECT_TEMPLATE = PACKAGE_DEFAULTS / "project"
KCONFIG_VARIABLE = "CRSP_OPS_KCONFIG"


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
        "crsp-ops in the project directory, set CRSP_OPS_ROOT to it, or create one with "
        "`crsp-ops init`"
    )


def working_root(start: str | os.PathLike | None = None) -> Path:
    """The project root (``project_root``) when inside one, else the working directory."""
    try:
        return project_root(start)
    except MissingInputError:
        return Path.cwd().resolve()


def kconfig_file(root: Path) -> Path:
    """The Kconfig a root declares its options with: its own, else the packaged defaults."""
    own = Path(root) / "Kconfig"
    return own if own.is_file() else PACKAGED_KCONFIG


def point_at_packaged_kconfig() -> None:
    """Let a project's ``source "$(CRSP_OPS_KCONFIG)"`` find the packaged tree (unless set)."""
    os.environ.setdefault(KCONFIG_VARIABLE, str(PACKAGED_KCONFIG))


def copy_config_tree(source_root: Path, target_root: Path) -> None:
    """Give another root the project Kconfig of ``source_root`` (tests, benchmarks, scratch).

    It sources the packaged declarations, so a copy reads the same options wherever it is.
    """
    shutil.copy(Path(source_root) / "Kconfig", Path(target_root) / "Kconfig")
