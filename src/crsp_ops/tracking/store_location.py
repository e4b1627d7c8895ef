"""Keep a project's own MLflow store writing into the project, even after the project moved.

The default store (``sqlite:///<project>/mlflow.db``) records absolute artifact locations
(``file:///<project>/mlruns/<experiment>``). A copied or cloned project carries that database,
so without a check its runs would write into the *original* project's ``mlruns/``. Before a run
opens, locations under another directory's ``mlruns/`` are relocated to this project's
``mlruns/`` (the artifacts already there were copied with the project); a local location that
is not under any ``mlruns/`` cannot be mapped and stops the run with the fix.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from urllib.parse import unquote, urlparse

logger = logging.getLogger(__name__)

ARTIFACT_DIR = "mlruns"
# every column of MLflow's sqlite schema that holds an artifact location
LOCATION_COLUMNS = (
    ("experiments", "artifact_location"),
    ("runs", "artifact_uri"),
    ("model_versions", "source"),
    ("model_versions", "storage_location"),
    ("logged_models", "artifact_location"),
)


class ArtifactLocationError(RuntimeError):
    """The project's store points at artifacts outside the project that cannot be relocated."""


def local_path(location: str) -> Path | None:
    """The local filesystem path of an artifact location (``None`` for remote stores).

    >>> local_path("file:///p/mlruns/e"), local_path("/p/mlruns/0"), local_path("s3://b/x")
    (PosixPath('/p/mlruns/e'), PosixPath('/p/mlruns/0'), None)
    """
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme == "" and location.startswith("/"):
        return Path(location)
    return None


def foreign_artifact_roots(locations: Iterable[str], project_root: Path) -> set[Path]:
    """The ``.../mlruns`` directories outside ``project_root`` that ``locations`` use.

    Raises:
        ArtifactLocationError: a local location outside the project is not under a ``mlruns``.
    """
    roots = set()
    for location in locations:
        path = local_path(location)
        if path is None or path.is_relative_to(project_root):
            continue
        parts = path.parts
        if ARTIFACT_DIR not in parts:
            raise ArtifactLocationError(
                f"the project's MLflow store keeps artifacts at {location}, outside this project "
                f"({project_root}), and it cannot be mapped into {project_root / ARTIFACT_DIR}. "
                "Fix: set tracking.uri to the store that owns those artifacts, or move "
                f"{project_root / 'mlflow.db'} and {project_root / ARTIFACT_DIR} aside to start "
                "a fresh store in this project"
            )
        last = len(parts) - 1 - parts[::-1].index(ARTIFACT_DIR)
        roots.add(Path(*parts[: last + 1]))
    return roots


def ensure_store_in_project(db_path: Path, project_root: Path) -> list[Path]:
    """Relocate artifact locations of the project's sqlite store into ``project_root/mlruns``.

    Returns:
        The foreign ``mlruns`` roots that were rewritten (empty when the store was in place).
    """
    if not db_path.is_file():
        return []
    target = project_root / ARTIFACT_DIR
    with sqlite3.connect(db_path) as connection:  # one transaction: all or nothing
        locations = [row[0] for row in connection.execute(
            "SELECT artifact_location FROM experiments") if row[0]]
        roots = foreign_artifact_roots(locations, project_root)
        columns = [(t, c) for t, c in LOCATION_COLUMNS if _has_column(connection, t, c)]
        for old in sorted(roots):
            for old_form, new_form in ((old.as_uri(), target.as_uri()), (str(old), str(target))):
                for table, column in columns:
                    connection.execute(
                        f"UPDATE {table} SET {column} = ? || substr({column}, ?) "  # noqa: S608
                        f"WHERE substr({column}, 1, ?) = ?",
                        (new_form, len(old_form) + 1, len(old_form) + 1, old_form + "/"),
                    )
            logger.warning("the MLflow store %s pointed at %s (a copied project?): its artifact "
                           "locations now point at %s", db_path, old, target)
    return sorted(roots)


def _has_column(connection: sqlite3.Connection, table: str, column: str) -> bool:
    return any(row[1] == column for row in connection.execute(f"PRAGMA table_info({table})"))
