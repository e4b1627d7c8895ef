"""Identifier migration of an Absolute-Zero-Reasoner-style codebase to CRSP names.

Plan (pure apart from reading the tree), validate the planned tree, then apply:

>>> plan = plan_migration(root, MigrationOptions(keep=("MyOrg/azr-.*",)))   # doctest: +SKIP
>>> rules = with_additions(DEFAULT_RULES, [parse_rule("Azr=Crsp")])        # --rule Azr=Crsp
>>> validation = validate_plan(plan)                                       # doctest: +SKIP
>>> apply_plan(plan)                                                       # doctest: +SKIP
"""

from crsp_ops.migrate.apply import AppliedMigration, apply_plan
from crsp_ops.migrate.labels import LABEL_REASON
from crsp_ops.migrate.plan import (
    FileEdit,
    LabelForReview,
    MigrationOptions,
    MigrationPlan,
    Occurrence,
    ProtectedReference,
    SkippedFile,
    plan_migration,
)
from crsp_ops.migrate.report import build_report, format_summary, render_diff
from crsp_ops.migrate.rewrite import rewrite_text
from crsp_ops.migrate.rules import DEFAULT_RULES, Rule, parse_rule, with_additions
from crsp_ops.migrate.validate import Validation, validate_plan

__all__ = [
    "DEFAULT_RULES",
    "LABEL_REASON",
    "AppliedMigration",
    "FileEdit",
    "LabelForReview",
    "MigrationOptions",
    "MigrationPlan",
    "Occurrence",
    "ProtectedReference",
    "Rule",
    "SkippedFile",
    "Validation",
    "apply_plan",
    "build_report",
    "format_summary",
    "parse_rule",
    "plan_migration",
    "render_diff",
    "rewrite_text",
    "validate_plan",
    "with_additions",
]
