"""The few git operations the migration needs; every one degrades to "not a git tree"."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path


def git_available() -> bool:
    """Whether a ``git`` executable is on PATH."""
    return shutil.which("git") is not None


def work_tree_root(path: Path) -> Path | None:
    """The top of the git work tree containing ``path``, or ``None`` outside one."""
    if not git_available():
        return None
    result = _git(path, "rev-parse", "--is-inside-work-tree", "--show-toplevel", check=False)
    lines = result.stdout.splitlines()
    if result.returncode != 0 or not lines or lines[0].strip() != "true":
        return None
    return Path(lines[1].strip())


def list_files(path: Path) -> tuple[list[str], frozenset[str]]:
    """Files under ``path`` that git knows or would add, and the subset it tracks.

    Paths are POSIX and relative to ``path``. Ignored files (build outputs, logs, virtual
    environments) are not listed: the user told git they are not part of the codebase.
    """
    listed = _git(path, "ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    tracked = _git(path, "ls-files", "-z", "--cached").stdout
    return _split(listed), frozenset(_split(tracked))


def move(cwd: Path, old: str, new: str) -> None:
    """``git mv old new`` (paths relative to ``cwd``), so history follows the rename."""
    _git(cwd, "mv", "--", old, new)


def _split(output: str) -> list[str]:
    return list(dict.fromkeys(item for item in output.split("\0") if item))


def _git(cwd: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(
        ["git", "-C", str(cwd), *args], capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {result.stderr.strip()}")
    return result
