"""Identifier migration of an Absolute-Zero-Reasoner-style codebase to CRSP names.

Plan (pure apart from reading the tree), validate the planned tree, then apply:

>>> plan = plan_migration(root, MigrationOptions(keep=("MyOrg/azr-.*",)))   # doctest: +SKIP
>>> validation = validate_plan(plan)                                       # doctest: +SKIP
>>> apply_plan(plan)                                                       # doctest: +SKIP
"""

from crsp_ops.migrate.apply import AppliedMigration, apply_plan
from crsp_ops.migrate.plan import (
    FileEdit,
    MigrationOptions,
    MigrationPlan,
    Occurrence,
    SkippedFile,
    plan_migration,
)
from crsp_ops.migrate.report import build_report, format_summary, render_diff
from crsp_ops.migrate.rewrite import rewrite_text
from crsp_ops.migrate.rules import DEFAULT_RULES, Rule
from crsp_ops.migrate.validate import Validation, validate_plan

__all__ = [
    "DEFAULT_RULES",
    "AppliedMigration",
    "FileEdit",
    "MigrationOptions",
    "MigrationPlan",
    "Occurrence",
    "Rule",
    "SkippedFile",
    "Validation",
    "apply_plan",
    "build_report",
    "format_summary",
    "plan_migration",
    "render_diff",
    "rewrite_text",
    "validate_plan",
]
