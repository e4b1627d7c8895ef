"""Plan and perform file and directory renames, deepest first, through git when it tracks them."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from crsp_ops.migrate import gitutil


@dataclass(frozen=True)
class Rename:
    """One entry's new name; its parents are renamed by their own, later, renames."""

    old: str  # the entry's path before anything moves
    new_name: str  # its new last component
    is_dir: bool

    @property
    def step_target(self) -> str:
        """Where the entry lands when it is renamed (its parents still carry old names)."""
        parent = PurePosixPath(self.old).parent
        return (parent / self.new_name).as_posix() if str(parent) != "." else self.new_name

    @property
    def depth(self) -> int:
        """Number of path components; deeper entries are renamed first."""
        return self.old.count("/") + 1


def entries(files: Iterable[str]) -> list[tuple[str, bool]]:
    """Every file and every parent directory of ``files``, as ``(path, is_dir)``."""
    found: dict[str, bool] = {}
    for path in files:
        parts = path.split("/")
        for depth in range(1, len(parts)):
            found.setdefault("/".join(parts[:depth]), True)
        found[path] = False
    return sorted(found.items())


def plan_renames(
    files: Iterable[str], new_name_of: Callable[[str], str]
) -> tuple[Rename, ...]:
    """Renames for every entry whose name ``new_name_of(path)`` changes, deepest first."""
    renames = []
    for path, is_dir in entries(files):
        name = path.rsplit("/", 1)[-1]
        new_name = new_name_of(path)
        if new_name != name:
            renames.append(Rename(path, new_name, is_dir))
    return tuple(sorted(renames, key=lambda rename: (-rename.depth, rename.old)))


def final_paths(files: Iterable[str], renames: Iterable[Rename]) -> dict[str, str]:
    """Map each path (file or directory) to its path once every rename is done."""
    new_names = {rename.old: rename.new_name for rename in renames}
    return {path: final_path(path, new_names) for path in files}


def final_path(path: str, new_names: Mapping[str, str]) -> str:
    """``path`` with every component renamed per ``new_names`` (old entry path -> new name)."""
    parts = path.split("/")
    return "/".join(new_names.get("/".join(parts[: i + 1]), part) for i, part in enumerate(parts))


def find_conflicts(files: Iterable[str], renames: Iterable[Rename]) -> list[str]:
    """Renames that would overwrite an existing entry or merge two entries into one path."""
    files = list(files)
    renames = list(renames)
    renamed = {rename.old for rename in renames}
    existing = {path for path, _ in entries(files)}
    problems = []
    for rename in renames:
        target = rename.step_target
        if target in existing and target not in renamed:
            problems.append(f"{rename.old} -> {target}: target already exists")
    seen: dict[str, str] = {}
    for old, new in final_paths(files, renames).items():
        # A clash with an entry that does not move was reported above, at the renamed entry.
        if new in seen and seen[new] != old and new != old and seen[new] != new:
            problems.append(f"{seen[new]} and {old} would both become {new}")
        seen[new] = old
    return problems


def execute_renames(
    root: Path, renames: Iterable[Rename], tracked: frozenset[str], use_git: bool
) -> list[tuple[Rename, str]]:
    """Perform ``renames`` (deepest first) and return each with how it was done.

    Entries git tracks (a file, or a directory holding a tracked file) move with ``git mv`` so
    ``git log --follow`` keeps their history; everything else moves with ``os.rename``.
    """
    tracked_dirs = _tracked_dirs(tracked)
    done = []
    for rename in sorted(renames, key=lambda r: (-r.depth, r.old)):
        is_tracked = rename.old in tracked_dirs if rename.is_dir else rename.old in tracked
        if use_git and is_tracked:
            gitutil.move(root, rename.old, rename.step_target)
            done.append((rename, "git mv"))
        else:
            os.rename(root / rename.old, root / rename.step_target)
            done.append((rename, "rename"))
    return done


def _tracked_dirs(tracked: Iterable[str]) -> frozenset[str]:
    return frozenset(
        "/".join(path.split("/")[:depth])
        for path in tracked
        for depth in range(1, path.count("/") + 1)
    )


def describe(renames: Iterable[Rename]) -> list[str]:
    """Human-readable ``old -> final`` lines, directories marked with a trailing slash."""
    renames = list(renames)
    new_names = {rename.old: rename.new_name for rename in renames}
    lines = []
    for rename in renames:
        slash = "/" if rename.is_dir else ""
        lines.append(f"{rename.old}{slash} -> {final_path(rename.old, new_names)}{slash}")
    return lines
