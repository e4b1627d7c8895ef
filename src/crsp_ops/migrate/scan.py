"""Which files the migration looks at, and whether each can be rewritten as UTF-8 text."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from crsp_ops.migrate import gitutil
from crsp_ops.migrate.protect import is_hub_cache_name

# Never part of the codebase being migrated: version control, caches, virtual environments.
EXCLUDED_DIR_NAMES = frozenset(
    {".git", ".hg", ".svn", "__pycache__", ".venv", "venv", ".tox", ".nox", ".mypy_cache",
     ".pytest_cache", ".ruff_cache", "node_modules", ".ipynb_checkpoints", ".dvc"}
)
BINARY_REASON = "binary file"
NON_UTF8_REASON = "non-UTF-8 text"
REPORT_REASON = "a crsp-ops migrate report"
REPORT_MARKER = '"tool": "crsp-ops migrate"'
_BYTES_DETECTION = re.compile(rb"azr|absolute[\s_-]*zero[\s_-]*reasoner", re.IGNORECASE)


@dataclass(frozen=True)
class Listing:
    """The files of a tree to migrate and how they are versioned."""

    files: tuple[str, ...]  # POSIX paths relative to the tree root, sorted
    tracked: frozenset[str]  # the subset git tracks (empty outside git)
    git_root: Path | None  # top of the git work tree, when renames go through git
    excluded: tuple[str, ...]  # directories left out (caches, venvs, nested repositories)


@dataclass(frozen=True)
class FileContent:
    """A file's decoded text, or why it is skipped and how many old names its bytes hold."""

    path: str
    text: str | None
    skip_reason: str | None = None
    possible_occurrences: int = 0
    raw_text: str | None = None  # latin-1 view of a non-UTF-8 file, to locate its occurrences


def list_tree(root: Path, use_git: bool = True, exclude: frozenset[str] = frozenset()) -> Listing:
    """List the files under ``root``: through git inside a work tree, else by walking it.

    Args:
        root: the tree to migrate.
        use_git: consult git (file list, tracked set) when ``root`` is inside a work tree.
        exclude: relative paths never to list (e.g. the report being written into the tree).
    """
    git_root = gitutil.work_tree_root(root) if use_git else None
    if git_root is not None:
        listed, tracked = gitutil.list_files(root)
        files, excluded = [], []
        for path in listed:
            full = root / path
            # A trailing slash (nested repository) or a directory entry (submodule) is another
            # project's code; a listed-but-deleted file has nothing to migrate.
            if path.endswith("/") or (full.is_dir() and not full.is_symlink()):
                excluded.append(path.rstrip("/"))
            elif (full.exists() or full.is_symlink()) and not _in_excluded_dir(path):
                files.append(path)
            elif _in_excluded_dir(path):
                excluded.append(_excluded_ancestor(path))
    else:
        files, excluded, tracked = *_walk(root), frozenset()
    files = sorted(path for path in files if path not in exclude)
    return Listing(tuple(files), tracked, git_root, tuple(sorted(set(excluded))))


def read_content(root: Path, path: str, max_bytes: int) -> FileContent:
    """Read ``root/path`` and decide whether it is rewritable UTF-8 text."""
    full = root / path
    try:
        if full.stat().st_size > max_bytes:
            return FileContent(path, None, f"larger than {max_bytes} bytes", 0)
        data = full.read_bytes()
    except OSError as error:
        return FileContent(path, None, f"unreadable ({error.strerror})", 0)
    hits = len(_BYTES_DETECTION.findall(data))
    if b"\0" in data[:8192]:
        return FileContent(path, None, BINARY_REASON, hits)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return FileContent(path, None, NON_UTF8_REASON, hits, raw_text=data.decode("latin-1"))
    if path.endswith(".json") and REPORT_MARKER in text[:200]:
        # Our own report quotes every old name; rewriting it would break idempotence.
        return FileContent(path, None, REPORT_REASON, 0)
    return FileContent(path, text)


def _in_excluded_dir(path: str) -> bool:
    return any(_excluded_name(part) for part in path.split("/")[:-1])


def _excluded_ancestor(path: str) -> str:
    parts = path.split("/")
    depth = next(i for i, part in enumerate(parts[:-1]) if _excluded_name(part))
    return "/".join(parts[: depth + 1])


def _excluded_name(name: str) -> bool:
    # A hub cache directory (``models--org--name``) holds a downloaded repository: its file
    # names and bytes are the published artifact's, never the codebase's.
    return name in EXCLUDED_DIR_NAMES or name.endswith(".egg-info") or is_hub_cache_name(name)


def _walk(root: Path) -> tuple[list[str], list[str]]:
    files, excluded = [], []
    for directory, dir_names, file_names in os.walk(root):
        relative = Path(directory).relative_to(root)
        for name in list(dir_names):
            path = (relative / name).as_posix()
            full = Path(directory) / name
            if _excluded_name(name) or (full / "pyvenv.cfg").exists():
                excluded.append(path)
                dir_names.remove(name)
            elif full.is_symlink():
                files.append(path)  # not followed: migrated as a link, never through it
                dir_names.remove(name)
        files += [(relative / name).as_posix() for name in file_names]
    return files, excluded
