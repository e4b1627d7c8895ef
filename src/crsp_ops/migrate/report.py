"""The migration report: a JSON document, a printed summary and the dry-run diff."""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import asdict
from typing import Any

from crsp_ops.migrate import renames as renames_mod
from crsp_ops.migrate.apply import AppliedMigration
from crsp_ops.migrate.plan import MigrationPlan, ProtectedReference
from crsp_ops.migrate.rewrite import UNMAPPED_REASON
from crsp_ops.migrate.scan import REPORT_MARKER
from crsp_ops.migrate.validate import Validation

TOOL = REPORT_MARKER.split(": ")[1].strip('"')  # the marker that keeps reports out of scans


def build_report(
    plan: MigrationPlan,
    validation: Validation,
    *,
    dry_run: bool,
    applied: AppliedMigration | None = None,
    second_pass_changes: int | None = None,
) -> dict[str, Any]:
    """The full report as a JSON-ready dict.

    Args:
        plan: the planned migration.
        validation: checks run on the tree the plan produces.
        dry_run: whether the tree was left untouched.
        applied: what was done, when the plan was applied.
        second_pass_changes: edits plus renames a fresh plan of the migrated tree still wanted
            (0 proves idempotence); ``None`` on a dry run.
    """
    how = {old: via for old, _, via in applied.renamed} if applied else {}
    ok = validation.ok and second_pass_changes in (None, 0)
    new_names = {rename.old: rename.new_name for rename in plan.renames}
    return {
        "tool": TOOL,
        "root": str(plan.root),
        "dry_run": dry_run,
        "git_work_tree": str(plan.git_root) if plan.git_root else None,
        "ok": ok,
        "summary": _summary(plan),
        "rules": list(plan.rules),
        "replacements_per_rule": plan.replacements_per_rule(),
        "files_changed": [
            {"path": e.path, "new_path": e.new_path, "replacements": dict(e.counts)}
            for e in plan.edits
        ],
        "renames": [
            {"from": r.old, "to": renames_mod.final_path(r.old, new_names),
             "kind": "directory" if r.is_dir else "file", "via": how.get(r.old)}
            for r in plan.renames
        ],
        "remaining": [asdict(occurrence) for occurrence in plan.remaining],
        "remaining_by_reason": dict(Counter(o.reason for o in plan.remaining).most_common()),
        "protected_references": [asdict(reference) for reference in plan.protected],
        "protected_by_kind": protected_by_kind(plan.protected),
        "labels_for_review": [asdict(label) for label in plan.labels],
        "skipped": [asdict(skipped) for skipped in plan.skipped],
        "excluded_directories": list(plan.excluded),
        "validation": _validation_section(validation, second_pass_changes),
    }


def _summary(plan: MigrationPlan) -> dict[str, int]:
    """The report's ``summary``: counts of what the plan scans, changes and leaves."""
    return {
        "files_scanned": len(plan.files),
        "files_changed": len(plan.edits),
        "paths_renamed": len(plan.renames),
        "replacements": sum(plan.replacements_per_rule().values()),
        "remaining_occurrences": len(plan.remaining),
        "protected_references": len(plan.protected),
        "labels_for_review": len(plan.labels),
        "files_skipped": len(plan.skipped),
    }


def _validation_section(validation: Validation, second_pass_changes: int | None) -> dict[str, Any]:
    """The report's ``validation``: the checks run on the migrated tree."""
    return {
        "ok": validation.ok,
        "python_files": validation.python_files,
        "compile_failures": list(validation.compile_failures),
        "preexisting_compile_failures": list(validation.preexisting_compile_failures),
        "references_checked": validation.references_checked,
        "broken_references": [asdict(broken) for broken in validation.broken_references],
        "rename_conflicts": list(validation.conflicts),
        "second_pass_changes": second_pass_changes,
    }


def protected_by_kind(references: tuple[ProtectedReference, ...]) -> dict[str, list[str]]:
    """``{kind: ["path:line: text", ...]}``, kinds by count (most first), entries in path order."""
    grouped: dict[str, list[str]] = {}
    for reference in references:
        where = reference.path + (f":{reference.line}" if reference.line else "")
        grouped.setdefault(reference.kind, []).append(f"{where}: {reference.text}")
    return dict(sorted(grouped.items(), key=lambda item: (-len(item[1]), item[0])))


def format_summary(report: dict[str, Any], max_listed: int = 40) -> str:
    """A readable summary of ``report`` for the terminal."""
    summary, validation = report["summary"], report["validation"]
    verb = "would change" if report["dry_run"] else "changed"
    lines = [
        f"crsp-ops migrate {report['root']}" + (" (dry run: nothing written)"
                                                if report["dry_run"] else ""),
        f"  {summary['files_scanned']} files scanned; {verb} {summary['files_changed']} files, "
        f"{summary['paths_renamed']} renames, {summary['replacements']} replacements",
    ]
    if report["git_work_tree"]:
        lines.append("  git work tree: tracked paths move with `git mv`; the index holds the pure "
                     "renames, the edits are unstaged.")
        if not report["dry_run"] and summary["paths_renamed"]:
            # Git detects renames by similarity; small files whose lines all change would lose
            # their history if renames and edits were committed together.
            lines.append("  keep history exact: `git commit -m 'Rename AZR paths to CRSP'` first, "
                         "then `git commit -am 'Rewrite AZR identifiers'`")
    lines.append("  replacements per rule:")
    lines += [f"    {count:6d}  {rule}" for rule, count in report["replacements_per_rule"].items()]
    lines += _protected_lines(report["protected_by_kind"], max_listed)
    labels = report["labels_for_review"]
    if labels:
        lines.append(f"  labels of published artifacts, left for review ({len(labels)}; "
                     "--rename-labels rewrites them):")
        lines += [f"    {label['path']}:{label['line']}: {label['text']!r} "
                  f"(names {label['reference']})" for label in labels[:max_listed]]
    if report["skipped"]:
        lines.append(f"  skipped ({len(report['skipped'])} files, contents never modified):")
        lines += [
            f"    {s['path']}: {s['reason']}"
            + (f" ({s['possible_occurrences']} possible old names inside)"
               if s["possible_occurrences"] else "")
            for s in report["skipped"][:max_listed]
        ]
    remaining = report["remaining"]
    lines.append(f"  remaining occurrences: {len(remaining)}")
    by_reason = report["remaining_by_reason"].items()
    lines += [f"    {count:6d}  {reason}" for reason, count in by_reason]
    for occurrence in remaining[:max_listed]:
        where = occurrence["path"] + (f":{occurrence['line']}" if occurrence["line"] else "")
        lines.append(f"    {where}: {occurrence['text']!r} ({occurrence['reason']})")
    if len(remaining) > max_listed:
        lines.append(f"    ... {len(remaining) - max_listed} more (see --report FILE)")
    if UNMAPPED_REASON in report["remaining_by_reason"]:
        lines.append("  to rewrite a spelling no rule names, add a rule: --rule OLD=NEW "
                     "(e.g. --rule Azr=Crsp)")
    lines += _validation_lines(validation)
    lines.append("OK" if report["ok"] else "VALIDATION FAILED")
    return "\n".join(lines)


def _protected_lines(by_kind: dict[str, list[str]], max_listed: int) -> list[str]:
    total = sum(len(entries) for entries in by_kind.values())
    if not total:
        return []
    lines = [f"  protected references, never rewritten ({total}):"]
    shown = 0
    for kind, entries in by_kind.items():
        lines.append(f"    {kind} ({len(entries)}):")
        for entry in entries:
            if shown == max_listed:
                break
            lines.append(f"      {entry}")
            shown += 1
    if total > shown:
        lines.append(f"    ... {total - shown} more (see --report FILE)")
    return lines


def _validation_lines(validation: dict[str, Any]) -> list[str]:
    checked = ", ".join(f"{n} {kind}" for kind, n in validation["references_checked"].items())
    lines = [
        f"  validation: {validation['python_files']} Python files compile-checked; "
        f"references checked: {checked or 'none'}"
    ]
    for failure in validation["compile_failures"]:
        lines.append(f"    does not compile after migration: {failure}")
    for failure in validation["preexisting_compile_failures"]:
        lines.append(f"    (already failed to compile before migration: {failure})")
    for broken in validation["broken_references"]:
        lines.append(f"    broken {broken['kind']}: {broken['path']}:{broken['line']}: "
                     f"{broken['target']} (was {broken['was']})")
    for conflict in validation["rename_conflicts"]:
        lines.append(f"    rename conflict: {conflict}")
    if validation["second_pass_changes"]:
        lines.append(f"    a second pass still wants {validation['second_pass_changes']} changes")
    return lines


def render_diff(plan: MigrationPlan) -> str:
    """Unified diff of every edit (``a/`` old path, ``b/`` new path), then the planned renames."""
    chunks = []
    for edit in plan.edits:
        diff = difflib.unified_diff(
            edit.old_text.splitlines(keepends=True),
            edit.new_text.splitlines(keepends=True),
            fromfile=f"a/{edit.path}",
            tofile=f"b/{edit.new_path}",
        )
        chunks.append("".join(line if line.endswith("\n") else line + "\n\\ No newline at end "
                              "of file\n" for line in diff))
    if plan.renames:
        chunks.append("renames:\n" + "".join(
            f"  {line}\n" for line in renames_mod.describe(plan.renames)))
    return "".join(chunks)
