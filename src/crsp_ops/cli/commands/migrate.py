r"""``crsp-ops migrate``: port an Absolute-Zero-Reasoner-style checkout to CRSP names.

Applies the seed's rules only (``absolute_zero_reasoner`` -> ``rewarded_self_play``, ``AZR`` ->
``CRSP``, ``azr`` -> ``crsp``, the prose name -> "Cognition via Rewarded Self-Play") plus any
``--rule`` additions, renames files and directories (through ``git mv`` inside a git work tree),
leaves published references (hub ids and their cache directories, HF/W&B/MLflow URIs, loader
arguments), other URLs, citations and ``--keep`` matches alone, holds labels of published
artifacts for review, and validates the result.

Usage::

    crsp-ops migrate ~/Absolute-Zero-Reasoner --dry-run          # diff + renames, writes nothing
    crsp-ops migrate ~/Absolute-Zero-Reasoner --report migrate.json --keep 'MyOrg/azr-\w+'
    crsp-ops migrate ~/Absolute-Zero-Reasoner --rule Azr=Crsp --rename-labels

Exit codes: 0 migrated (or would migrate) and validated; 1 validation failed or renames
conflict (nothing is written on a conflict); 2 usage error.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsp_ops.cli.entry import stage_main

HELP = "Migrate an AZR-style codebase to CRSP names (rewrite, rename, validate)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare the ``migrate`` options on ``parser``."""
    parser.add_argument("path", type=Path, metavar="PATH", help="root of the tree to migrate")
    parser.add_argument(
        "--dry-run", action="store_true",
        help="print the unified diff and planned renames, validate, and touch nothing",
    )
    parser.add_argument(
        "--report", type=Path, metavar="FILE",
        help="also write the validation report as JSON to FILE",
    )
    parser.add_argument(
        "--keep", action="extend", nargs="+", default=[], metavar="PATTERN",
        help="regular expression whose matches are never rewritten (repeatable); URLs, hub "
             "model ids and citations are always kept",
    )
    parser.add_argument(
        "--rule", action="extend", nargs="+", default=[], metavar="OLD=NEW",
        help="also rewrite OLD to NEW (repeatable; case-sensitive; replaces a seed rule with the "
             "same OLD), e.g. --rule Azr=Crsp; spellings no rule names are only reported",
    )
    parser.add_argument(
        "--rename-labels", action="store_true",
        help="also rewrite labels that share a name with a published artifact referenced in the "
             "same file (e.g. \"AZR-Coder-7b\" beside its hub id); by default they are reported",
    )
    parser.add_argument(
        "--no-git", action="store_true",
        help="ignore git: walk the directory and rename with plain renames",
    )
    parser.add_argument(
        "--max-file-mb", type=float, default=10.0,
        help="skip (and list) files larger than this many MiB (default 10)",
    )


def run(args: argparse.Namespace) -> int:
    """Plan, validate, and (unless ``--dry-run``) apply the migration; return the exit code."""
    from crsp_ops.atomic_io import atomic_write_json
    from crsp_ops.migrate import (
        apply_plan,
        build_report,
        format_summary,
        plan_migration,
        render_diff,
        validate_plan,
    )

    root = Path(args.path).expanduser()
    if not root.exists():
        return _usage_error(f"{root} does not exist")
    if not root.is_dir():
        return _usage_error(f"{root} is not a directory")
    root = root.resolve()
    report_path = Path(args.report).expanduser().resolve() if args.report else None
    try:
        options = _options(args, root, report_path)
    except ValueError as error:
        return _usage_error(str(error))

    plan = plan_migration(root, options)
    validation = validate_plan(plan)
    applied, second_pass = None, None
    if args.dry_run:
        sys.stdout.write(render_diff(plan))
    elif plan.conflicts:
        print("refusing to migrate: renames conflict; nothing was written", file=sys.stderr)
    else:
        try:
            applied = apply_plan(plan)
        except (OSError, RuntimeError) as error:
            # A write or rename failed part-way: say so plainly; git (or the diff from
            # --dry-run) shows what was already done.
            print(f"crsp-ops migrate: error: migration stopped part-way: {error}",
                  file=sys.stderr)
            return 1
        again = plan_migration(root, options)
        second_pass = len(again.edits) + len(again.renames)
    report = build_report(
        plan, validation, dry_run=args.dry_run, applied=applied, second_pass_changes=second_pass
    )
    print(format_summary(report))
    if report_path is not None:
        atomic_write_json(report_path, report)
        print(f"report written to {report_path}")
    return 0 if report["ok"] else 1


def _options(args: argparse.Namespace, root: Path, report_path: Path | None):
    """The ``MigrationOptions`` the command line asks for (``ValueError`` on a bad option)."""
    from crsp_ops.migrate import DEFAULT_RULES, MigrationOptions, parse_rule, with_additions

    return MigrationOptions(
        keep=tuple(args.keep),
        max_file_bytes=int(args.max_file_mb * 2**20),
        use_git=not args.no_git,
        exclude=_inside(report_path, root),
        rules=with_additions(DEFAULT_RULES, [parse_rule(spec) for spec in args.rule]),
        rename_labels=args.rename_labels,
    )


def _inside(path: Path | None, root: Path) -> tuple[str, ...]:
    if path is None or not path.is_relative_to(root):
        return ()
    return (path.relative_to(root).as_posix(),)


def _usage_error(message: str) -> int:
    print(f"crsp-ops migrate: error: {message}", file=sys.stderr)
    return 2


main = stage_main(sys.modules[__name__])
