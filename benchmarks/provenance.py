"""Where a result line came from, computed from git: the commit it ran at, whether the tree was
clean, the test files' content hashes; for lines written before lines carried these, the commit
that added the line; and whether a declaration commit is an ancestor of a result commit.

Writers of claim lines call ``stamp(test_files)`` and merge it into the line; readers call
``line_commits`` and ``is_ancestor``. Every function returns empty values outside a git
checkout (a test's temporary folder), never raises for that.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Commits are shown by their first 7 hex digits, cut from the full hash: git's own short form
# grows with the object count, so it would differ between a clone and a long-lived checkout.
SHORT = 7


def _git(root: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess | None:
    """``git args`` in ``root``, read only (no optional locks); ``None`` without git. Popen,
    not ``subprocess.run``: a test that fakes the runs a benchmark starts must not fake this."""
    try:
        with subprocess.Popen(["git", *args], cwd=root, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=text,
                              env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"}) as process:
            out, err = process.communicate()
    except OSError:
        return None
    return subprocess.CompletedProcess(args, process.returncode, out, err)


def sha256(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sha256_at(commit: str, path: str, root: Path = REPO) -> str:
    """The hex sha256 of ``path`` as committed at ``commit``; empty if it was not there."""
    out = _git(root, "show", f"{commit}:{path}", text=False)
    return hashlib.sha256(out.stdout).hexdigest() if out and out.returncode == 0 else ""


def stamp(test_files: list[Path], root: Path = REPO) -> dict:
    """What a result line records about its run: ``{"commit", "tree_clean", "test_files"}``.

    ``commit`` is HEAD (empty outside git); ``tree_clean`` whether ``git status`` showed no
    change to tracked files; ``test_files`` maps each test file (relative to ``root``) to its
    sha256.
    """
    head = _git(root, "rev-parse", "HEAD")
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    commit = head.stdout.strip() if head and head.returncode == 0 else ""
    return {"commit": commit,
            "tree_clean": bool(commit) and status is not None and status.stdout.strip() == "",
            "test_files": {str(Path(p).resolve().relative_to(root.resolve())): sha256(Path(p))
                           for p in test_files}}


def line_commits(path: Path, root: Path = REPO) -> list[str]:
    """For each line of ``path``, the short commit that added it (``git blame``); ``""`` for a
    line not committed yet, and an empty list outside git."""
    out = _git(root, "blame", "-l", "-s", "--", str(path))
    if out is None or out.returncode != 0:
        return []
    commits = []
    for line in out.stdout.splitlines():
        sha = line.split(" ", 1)[0].lstrip("^")
        commits.append("" if set(sha) == {"0"} else sha[:SHORT])
    return commits


def is_ancestor(first: str, second: str, root: Path = REPO) -> bool | None:
    """Whether commit ``first`` is an ancestor of (or is) ``second``; ``None`` when git cannot
    tell (no checkout, an unknown commit)."""
    out = _git(root, "merge-base", "--is-ancestor", first, second)
    if out is None or out.returncode not in (0, 1):
        return None
    return out.returncode == 0


def added(path: Path, root: Path = REPO) -> tuple[str, str, str]:
    """(short commit, date, ISO time) of the commit that added ``path``, followed through
    renames (the lab's move kept each declaration's commit); empty outside git."""
    out = _git(root, "log", "--follow", "--diff-filter=A", "--format=%H %ad %cI",
               "--date=short", "--", str(path))
    words = out.stdout.split() if out is not None else []
    return (words[-3][:SHORT], words[-2], words[-1]) if len(words) >= 3 else ("", "", "")


def committed_at(commit: str, root: Path = REPO) -> str:
    """The ISO commit time of ``commit``; empty outside git or for no commit."""
    out = _git(root, "show", "-s", "--format=%cI", commit) if commit else None
    return out.stdout.strip() if out is not None and out.returncode == 0 else ""
