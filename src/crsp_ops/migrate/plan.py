"""Plan a migration of a tree: every edit, rename, skipped file and leftover, touching nothing."""

from __future__ import annotations

import dataclasses
import os
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from crsp_ops.migrate import renames as renames_mod
from crsp_ops.migrate import scan
from crsp_ops.migrate.labels import LABEL_REASON, find_labels
from crsp_ops.migrate.protect import (
    HUB_CACHE_REASON,
    Protection,
    find_protections,
    hub_cache_protections,
    is_hub_cache_name,
    keep_protections,
)
from crsp_ops.migrate.rewrite import Leftover, line_locator, rewrite_text
from crsp_ops.migrate.rules import DEFAULT_RULES, DETECTION, Rule


@dataclass(frozen=True)
class MigrationOptions:
    """What to migrate and what to leave alone."""

    keep: tuple[str, ...] = ()  # extra regular expressions whose matches are never rewritten
    max_file_bytes: int = 10 * 2**20  # larger files are listed as skipped, not read
    use_git: bool = True  # inside a git work tree: list files and rename through git
    exclude: tuple[str, ...] = ()  # relative paths never scanned (e.g. the report file)
    rules: tuple[Rule, ...] = DEFAULT_RULES  # the seed's mapping plus any --rule additions
    rename_labels: bool = False  # rewrite labels of published artifacts instead of listing them

    def __post_init__(self) -> None:
        for pattern in self.keep:
            try:
                re.compile(pattern)
            except re.error as error:
                raise ValueError(
                    f"--keep {pattern!r} is not a valid regular expression ({error}); "
                    "escape special characters, e.g. --keep 'Org/Model\\.v1'"
                ) from error
        if self.max_file_bytes <= 0:
            raise ValueError("max_file_bytes must be positive")

    @property
    def keep_patterns(self) -> tuple[re.Pattern[str], ...]:
        """The compiled ``keep`` patterns."""
        return tuple(re.compile(pattern) for pattern in self.keep)


@dataclass(frozen=True)
class Occurrence:
    """An old name left in the tree: where, what, and why it was not rewritten."""

    path: str
    line: int | None  # None when the occurrence is in the file or directory name
    column: int | None
    text: str
    reason: str


@dataclass(frozen=True)
class ProtectedReference:
    """A reference to something outside the codebase that kept an old name from being rewritten."""

    path: str
    line: int | None  # None when the reference is the file or directory name itself
    column: int | None
    kind: str  # e.g. "hub model id", "hub cache directory", "Hugging Face URL", "MLflow URI"
    text: str  # the reference (its first line, at most 160 characters)


@dataclass(frozen=True)
class LabelForReview:
    """Text naming a published artifact, left for the user to review (see ``--rename-labels``)."""

    path: str
    line: int
    column: int
    text: str
    reference: str  # the protected reference in the same file it shares its name with


@dataclass(frozen=True)
class FileEdit:
    """A text file whose contents change."""

    path: str  # path before the migration
    new_path: str  # path after every rename
    old_text: str
    new_text: str
    counts: Mapping[str, int]  # replacements per rule name
    is_symlink: bool = False  # old_text/new_text are then the link's target


@dataclass(frozen=True)
class SkippedFile:
    """A file whose contents are not rewritten (its name may still be)."""

    path: str
    reason: str
    possible_occurrences: int  # old-name byte patterns found in it


@dataclass(frozen=True)
class MigrationPlan:
    """Everything a migration would do to a tree, computed without changing it."""

    root: Path
    git_root: Path | None
    files: tuple[str, ...]  # every scanned file, old paths
    tracked: frozenset[str]
    texts: Mapping[str, str]  # old text of every UTF-8 text file
    edits: tuple[FileEdit, ...]
    renames: tuple[renames_mod.Rename, ...]  # deepest first
    new_paths: Mapping[str, str]  # old file path -> new file path
    skipped: tuple[SkippedFile, ...]
    remaining: tuple[Occurrence, ...]
    conflicts: tuple[str, ...]  # renames that cannot be done safely
    excluded: tuple[str, ...] = ()
    path_counts: Mapping[str, int] = field(default_factory=dict)  # name rewrites per rule
    protected: tuple[ProtectedReference, ...] = ()  # in path order, then document order
    labels: tuple[LabelForReview, ...] = ()  # not rewritten unless options.rename_labels
    rules: tuple[str, ...] = ()  # names of the rules applied, most specific first

    def replacements_per_rule(self) -> dict[str, int]:
        """Replacements per rule name over file contents and path names."""
        total: Counter[str] = Counter(self.path_counts)
        for edit in self.edits:
            total.update(edit.counts)
        return dict(sorted(total.items(), key=lambda item: (-item[1], item[0])))

    def new_texts(self) -> dict[str, str]:
        """Every text file's contents after the migration, keyed by its new path."""
        edited = {edit.path: edit.new_text for edit in self.edits}
        return {self.new_paths[path]: edited.get(path, text) for path, text in self.texts.items()}


def plan_migration(root: Path, options: MigrationOptions = MigrationOptions()) -> MigrationPlan:
    """Scan ``root`` and plan the migration; nothing on disk changes.

    Raises:
        NotADirectoryError: ``root`` is missing or not a directory.
    """
    root = Path(root)
    if not root.is_dir():
        raise NotADirectoryError(f"{root} is not a directory")
    listing = scan.list_tree(root, options.use_git, frozenset(options.exclude))
    contents = _plan_contents(root, listing.files, options)
    renames, path_counts, name_leftovers, name_protected = _plan_name_changes(
        listing.files, options
    )
    new_paths = renames_mod.final_paths(listing.files, renames)
    return MigrationPlan(
        root=root,
        git_root=listing.git_root,
        files=listing.files,
        tracked=listing.tracked,
        texts=contents.texts,
        edits=tuple(
            FileEdit(p, new_paths[p], old, new, c, is_symlink=(root / p).is_symlink())
            for p, old, new, c in contents.edits
        ),
        renames=renames,
        new_paths=new_paths,
        skipped=tuple(contents.skipped),
        remaining=tuple(sorted(name_leftovers + contents.remaining, key=_occurrence_order)),
        conflicts=tuple(renames_mod.find_conflicts(listing.files, renames)),
        excluded=listing.excluded,
        path_counts=path_counts,
        protected=tuple(sorted(
            _excluded_caches(listing.excluded) + name_protected + contents.protected,
            key=_occurrence_order,
        )),
        labels=tuple(contents.labels),
        rules=tuple(rule.name for rule in options.rules),
    )


@dataclass
class _ContentPlan:
    """What scanning file contents found, accumulated file by file in listing order."""

    texts: dict[str, str] = field(default_factory=dict)
    edits: list[tuple[str, str, str, Mapping[str, int]]] = field(default_factory=list)
    skipped: list[SkippedFile] = field(default_factory=list)
    remaining: list[Occurrence] = field(default_factory=list)
    protected: list[ProtectedReference] = field(default_factory=list)
    labels: list[LabelForReview] = field(default_factory=list)


def _plan_contents(root: Path, files: Sequence[str], options: MigrationOptions) -> _ContentPlan:
    """Plan the content edits of every file: link retargets, skipped files and text rewrites."""
    directory_names = {path.rsplit("/", 1)[-1] for path, is_dir in
                       renames_mod.entries(files) if is_dir}
    keep = options.keep_patterns
    plan = _ContentPlan()
    for path in files:
        if (root / path).is_symlink():
            retarget, leftovers = _plan_symlink(root, path, options)
            plan.edits += retarget
            plan.remaining += leftovers
            continue
        content = scan.read_content(root, path, options.max_file_bytes)
        if content.text is None:
            reason = content.skip_reason or ""
            plan.skipped.append(SkippedFile(path, reason, content.possible_occurrences))
            plan.remaining += _unreadable_occurrences(content)
            continue
        plan.texts[path] = content.text
        _plan_text(plan, path, content.text, options, keep, directory_names)
    return plan


def _plan_text(
    plan: _ContentPlan,
    path: str,
    text: str,
    options: MigrationOptions,
    keep: tuple[re.Pattern[str], ...],
    directory_names: set[str],
) -> None:
    """Rewrite one text file; add its edit, leftovers, protections and labels to ``plan``."""
    has_hits = DETECTION.search(text) is not None
    protections = find_protections(text, keep, directory_names) if has_hits else []
    found = [] if options.rename_labels else find_labels(text, protections)
    guards = protections + [label.protection() for label in found]
    result = rewrite_text(text, options.rules, guards)
    locate = line_locator(text) if result.leftovers else None
    for leftover in result.leftovers:
        line, column = locate(leftover.start)
        plan.remaining.append(Occurrence(path, line, column, leftover.text, leftover.reason))
    plan.protected += _protected_references(path, text, result.leftovers, locate)
    plan.labels += [
        LabelForReview(path, *locate(label.start), label.text, _excerpt(label.reference))
        for label in found
    ]
    if result.text != text:
        plan.edits.append((path, text, result.text, result.counts))


def _excluded_caches(excluded: Sequence[str]) -> list[ProtectedReference]:
    """Hub cache directories in the tree: left whole (listed as excluded) and listed here."""
    return [
        ProtectedReference(path, None, None, HUB_CACHE_REASON, path.rsplit("/", 1)[-1])
        for path in excluded
        if is_hub_cache_name(path.rsplit("/", 1)[-1]) and DETECTION.search(path)
    ]


def _protected_references(
    path: str,
    text: str,
    leftovers: Sequence[Leftover],
    locate: Callable[[int], tuple[int, int]] | None,
) -> list[ProtectedReference]:
    """Each protected span that kept at least one old name, once (labels are listed apart)."""
    guards = dict.fromkeys(
        leftover.guard for leftover in leftovers
        if leftover.guard is not None and leftover.guard.reason != LABEL_REASON
    )
    references = []
    for guard in guards:
        line, column = locate(guard.start)
        excerpt = _excerpt(text[guard.start : guard.end])
        references.append(ProtectedReference(path, line, column, guard.report_kind, excerpt))
    return references


def _excerpt(text: str, limit: int = 160) -> str:
    first = text.split("\n", 1)[0]
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _plan_name_changes(
    files: Sequence[str], options: MigrationOptions
) -> tuple[tuple[renames_mod.Rename, ...], dict[str, int], list[Occurrence],
           list[ProtectedReference]]:
    """Rewrite each entry's own name; ``--keep`` patterns see the entry's whole relative path.

    A name in hub cache form (``models--org--azr-7b``) is kept: the hub finds a cached
    repository by exactly that name (such directories are not even scanned, see ``scan``).
    """
    counts: Counter[str] = Counter()
    leftovers: list[Occurrence] = []
    protected: list[ProtectedReference] = []
    keep = options.keep_patterns

    def new_name_of(path: str) -> str:
        name = path.rsplit("/", 1)[-1]
        offset = len(path) - len(name)
        protections: list[Protection] = hub_cache_protections(name) + [
            dataclasses.replace(p, start=max(p.start - offset, 0), end=p.end - offset)
            for p in keep_protections(path, keep)
            if p.end > offset
        ]
        result = rewrite_text(name, options.rules, protections)
        counts.update(result.counts)
        leftovers.extend(
            Occurrence(path, None, None, item.text, f"in the name: {item.reason}")
            for item in result.leftovers
        )
        protected.extend(
            ProtectedReference(path, None, None, guard.report_kind, name[guard.start:guard.end])
            for guard in dict.fromkeys(item.guard for item in result.leftovers if item.guard)
        )
        return result.text

    renames = renames_mod.plan_renames(files, new_name_of)
    return renames, dict(counts), leftovers, protected


def _plan_symlink(
    root: Path, path: str, options: MigrationOptions
) -> tuple[list[tuple[str, str, str, Mapping[str, int]]], list[Occurrence]]:
    """Retarget a relative link whose target names renamed entries, so it does not dangle."""
    target = os.readlink(root / path)
    if Path(target).is_absolute():
        hits = [m.group() for m in DETECTION.finditer(target)]
        reason = "absolute symbolic link target (outside the tree's renames)"
        return [], [Occurrence(path, None, None, hit, reason) for hit in hits]
    guards = hub_cache_protections(target) + keep_protections(target, options.keep_patterns)
    result = rewrite_text(target, options.rules, guards)
    leftovers = [
        Occurrence(path, None, None, item.text, f"in the link target: {item.reason}")
        for item in result.leftovers
    ]
    edit = [(path, target, result.text, result.counts)] if result.text != target else []
    return edit, leftovers


def _unreadable_occurrences(content: scan.FileContent) -> list[Occurrence]:
    """Locate old names in a non-UTF-8 file so the user can fix them by hand."""
    if content.raw_text is None:
        return []
    locate = line_locator(content.raw_text)
    reason = f"{content.skip_reason}: not rewritten"
    return [
        Occurrence(content.path, *locate(match.start()), match.group(), reason)
        for match in DETECTION.finditer(content.raw_text)
    ]


def _occurrence_order(occurrence: Occurrence | ProtectedReference) -> tuple[str, int, int]:
    return occurrence.path, occurrence.line or 0, occurrence.column or 0
