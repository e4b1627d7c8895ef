"""Validate a planned migration: Python still compiles and no reference breaks.

References are compared before and after, file by file and kind by kind, in document order:
a reference that resolved in the old tree must resolve in the migrated one. References that
were already dangling (an optional dependency, a path created at run time) are not the
migration's to fix, so they never fail validation.
"""

from __future__ import annotations

import warnings
from collections import defaultdict
from dataclasses import dataclass

from crsp_ops.migrate.plan import MigrationPlan
from crsp_ops.migrate.references import Reference, TreeState, extract, resolves


@dataclass(frozen=True)
class BrokenReference:
    """A reference that resolved before the migration and does not after it."""

    kind: str
    path: str  # the referencing file, new path
    line: int
    target: str  # the reference after the migration
    was: str  # the reference before the migration


@dataclass(frozen=True)
class Validation:
    """Outcome of every check on a planned migration."""

    python_files: int
    compile_failures: tuple[str, ...]  # "path:line: message", broken by the migration
    preexisting_compile_failures: tuple[str, ...]  # already failing before; not our failure
    references_checked: dict[str, int]  # per kind, references that resolved before
    broken_references: tuple[BrokenReference, ...]
    conflicts: tuple[str, ...]

    @property
    def ok(self) -> bool:
        """Whether the migration is safe: no compile regression, broken reference or conflict."""
        return not (self.compile_failures or self.broken_references or self.conflicts)


def validate_plan(plan: MigrationPlan) -> Validation:
    """Check the tree ``plan`` would produce against the tree it starts from."""
    old_tree = TreeState(frozenset(plan.files), plan.texts)
    new_texts = plan.new_texts()
    new_tree = TreeState(frozenset(plan.new_paths.values()), new_texts)
    failures, preexisting, python_files = [], [], 0
    checked: dict[str, int] = defaultdict(int)
    broken: list[BrokenReference] = []
    renamed_names = _renamed_names(plan)
    for old_path, old_text in plan.texts.items():
        new_path = plan.new_paths[old_path]
        new_text = new_texts[new_path]
        if new_path.endswith(".py"):
            python_files += 1
            error = compile_error(new_path, new_text)
            if error is not None:
                was_broken = new_text == old_text or compile_error(old_path, old_text)
                (preexisting if was_broken else failures).append(error)
        if new_text == old_text and not _mentions_any(old_text, renamed_names):
            continue  # same references, none of which can point at a moved entry
        before = _by_kind(extract(old_path, old_text))
        after = _by_kind(extract(new_path, new_text))
        for kind, old_refs in before.items():
            broken += _compare(kind, old_refs, after.get(kind, []), old_tree, new_tree, checked)
    return Validation(
        python_files=python_files,
        compile_failures=tuple(failures),
        preexisting_compile_failures=tuple(preexisting),
        references_checked=dict(sorted(checked.items())),
        broken_references=tuple(broken),
        conflicts=plan.conflicts,
    )


def compile_error(path: str, text: str) -> str | None:
    """``"path:line: message"`` when ``text`` is not valid Python, else ``None``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", dont_inherit=True)
    except SyntaxError as error:
        return f"{path}:{error.lineno}: {error.msg}"
    except ValueError as error:  # e.g. source with NUL characters
        return f"{path}: {error}"
    return None


def _renamed_names(plan: MigrationPlan) -> tuple[str, ...]:
    """Old names of moved entries as references spell them (``pkg/mod.py`` -> ``mod``)."""
    names = {rename.old.rsplit("/", 1)[-1] for rename in plan.renames}
    return tuple(sorted(names | {name.rsplit(".", 1)[0] for name in names if "." in name}))


def _mentions_any(text: str, names: tuple[str, ...]) -> bool:
    return any(name in text for name in names)


def _by_kind(references: list[Reference]) -> dict[str, list[Reference]]:
    grouped: dict[str, list[Reference]] = defaultdict(list)
    for reference in references:
        grouped[reference.kind].append(reference)
    return grouped


def _compare(
    kind: str,
    old_refs: list[Reference],
    new_refs: list[Reference],
    old_tree: TreeState,
    new_tree: TreeState,
    checked: dict[str, int],
) -> list[BrokenReference]:
    # Rules never create or remove a reference, so the lists pair up one to one; if they
    # somehow do not, fall back to matching each old reference by its unchanged target.
    if len(old_refs) != len(new_refs):
        by_target = {ref.target: ref for ref in new_refs}
        pairs = [(old, by_target.get(old.target)) for old in old_refs]
    else:
        pairs = list(zip(old_refs, new_refs, strict=True))
    broken = []
    for old, new in pairs:
        if not resolves(old, old_tree):
            continue
        checked[kind] += 1
        if new is None or not resolves(new, new_tree):
            target = new.target if new is not None else "(missing after migration)"
            path = new.source if new is not None else old.source
            line = new.line if new is not None else old.line
            broken.append(BrokenReference(kind, path, line, target, old.target))
    return broken
