"""Create a local sqlite MLflow store once, however many processes open it at the same time.

MLflow 3.17's tracking store runs its schema migrations on first open without a lock, so two
workers starting together on a fresh ``mlflow.db`` both migrate and one dies (alembic: "Online
migration expected to match one row ... 0 found", or "table _alembic_tmp_... already exists").
The client (which opens its store in its constructor) is therefore created under an exclusive
lock file beside the database; a process that waited finds every table and migrates nothing.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlparse

from mlflow.tracking import MlflowClient

LOCK_SUFFIX = "-init.lock"  # mlflow.db-init.lock: git-ignored with mlflow.db-*


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (``None`` for any other store).

    >>> sqlite_path("sqlite:////p/mlflow.db"), sqlite_path("http://127.0.0.1:5000")
    (PosixPath('/p/mlflow.db'), None)
    """
    parsed = urlparse(uri)
    if parsed.scheme != "sqlite" or parsed.path in ("", "/", "/:memory:"):
        return None
    return Path(parsed.path[1:] if parsed.path.startswith("//") else parsed.path.lstrip("/"))


@contextmanager
def exclusive_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (created if missing) for the block."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def open_client(uri: str) -> MlflowClient:
    """``MlflowClient(uri, registry_uri=uri)``; a local sqlite store is opened under the lock.

    (The client opens its tracking store, migrations included, in its constructor.)
    """
    path = sqlite_path(uri)
    if path is None:  # a server or a database server migrates on its own side
        return MlflowClient(tracking_uri=uri, registry_uri=uri)
    with exclusive_lock(path.with_name(path.name + LOCK_SUFFIX)):
        return MlflowClient(tracking_uri=uri, registry_uri=uri)
