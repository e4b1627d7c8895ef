"""Carry out a planned migration: atomic content writes first, then renames deepest first."""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from crsp_ops.atomic_io import atomic_path
from crsp_ops.migrate import renames as renames_mod
from crsp_ops.migrate.plan import FileEdit, MigrationPlan


@dataclass(frozen=True)
class AppliedMigration:
    """What was done to the tree."""

    written: tuple[str, ...]  # files rewritten (old paths)
    renamed: tuple[tuple[str, str, str], ...]  # (old, final, "git mv" | "rename")


def apply_plan(plan: MigrationPlan) -> AppliedMigration:
    """Write every edit and perform every rename of ``plan``.

    Raises:
        ValueError: the plan has rename conflicts; nothing is touched.
    """
    if plan.conflicts:
        raise ValueError("refusing to migrate, renames conflict: " + "; ".join(plan.conflicts))
    for edit in plan.edits:
        if edit.is_symlink:
            retarget_symlink(plan.root / edit.path, edit.new_text)
        else:
            write_preserving_mode(plan.root / edit.path, edit)
    done = renames_mod.execute_renames(
        plan.root, plan.renames, plan.tracked, use_git=plan.git_root is not None
    )
    new_names = {rename.old: rename.new_name for rename in plan.renames}
    renamed = tuple(
        (rename.old, renames_mod.final_path(rename.old, new_names), how) for rename, how in done
    )
    return AppliedMigration(tuple(edit.path for edit in plan.edits), renamed)


def retarget_symlink(path: Path, target: str) -> None:
    """Point the link ``path`` at ``target``, atomically (a new link renamed over the old)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.link")
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def write_preserving_mode(path: Path, edit: FileEdit) -> None:
    """Replace ``path`` with ``edit.new_text`` atomically, keeping its permission bits.

    ``atomic_io.atomic_write_text`` would leave ``mkstemp``'s 0600 mode (launch scripts would
    lose their executable bit) and translate line endings; ``atomic_path`` lets the mode be set
    on the temporary file before the rename and the bytes be written exactly, so CRLF files and
    byte-order marks survive untouched.
    """
    mode = stat.S_IMODE(os.stat(path).st_mode)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as handle:
            handle.write(edit.new_text.encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
