"""Apply the rules to one text: rewrite what is safe, explain every occurrence left behind."""

from __future__ import annotations

import bisect
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from crsp_ops.migrate.protect import Protection
from crsp_ops.migrate.rules import DETECTION, Rule, at_identifier_boundary

IN_WORD_REASON = "inside a longer word (not an identifier boundary)"
# A spelling no rule names (``Azr``, ``Absolute_Zero_Reasoner``): ``--rule OLD=NEW`` adds one.
UNMAPPED_REASON = "left: not a mapping rule"


@dataclass(frozen=True)
class Leftover:
    """An occurrence of an old name that stays in the text, and why."""

    start: int
    end: int
    text: str
    reason: str
    guard: Protection | None = None  # the protected span that kept it, if any


@dataclass(frozen=True)
class RewriteResult:
    """The rewritten text, the replacements made per rule name, and what was left."""

    text: str
    counts: Mapping[str, int] = field(default_factory=dict)
    leftovers: tuple[Leftover, ...] = ()


def rewrite_text(
    text: str, rules: Sequence[Rule], protections: Sequence[Protection] = ()
) -> RewriteResult:
    """Rewrite every safe match of ``rules`` in ``text``.

    Rules go in the given order (most specific first); a match overlapping an earlier rule's
    match is skipped, so every occurrence is decided exactly once. A match inside a protected
    span or not at an identifier boundary is left and reported. Finally any spelling of the old
    names that no rule matched (e.g. ``Azr``) is reported too, so nothing is missed silently:
    as "not a mapping rule" when it is a whole identifier segment, else as inside a word.

    >>> from crsp_ops.migrate.rules import DEFAULT_RULES
    >>> rewrite_text("import azr_utils  # hazrat", DEFAULT_RULES).text
    'import crsp_utils  # hazrat'
    """
    if not DETECTION.search(text):
        return RewriteResult(text)
    claimed = _DisjointSpans()
    edits: list[tuple[int, int, str]] = []
    counts: Counter[str] = Counter()
    leftovers: list[Leftover] = []
    for rule in rules:
        for match in rule.pattern.finditer(text):
            start, end = match.span()
            if not claimed.claim(start, end):
                continue
            guard = _guard(start, end, protections)
            if guard is not None:
                leftovers.append(Leftover(start, end, match.group(), guard.reason, guard))
            elif not at_identifier_boundary(text, start, end):
                leftovers.append(Leftover(start, end, match.group(), IN_WORD_REASON))
            else:
                edits.append((start, end, rule.render(match.group())))
                counts[rule.name] += 1
    for match in DETECTION.finditer(text):
        start, end = match.span()
        if not claimed.overlaps(start, end):
            guard = _guard(start, end, protections)
            if guard is not None:
                reason = guard.reason
            elif at_identifier_boundary(text, start, end):
                reason = UNMAPPED_REASON
            else:
                reason = IN_WORD_REASON  # e.g. ``Azrael``: not the name at all
            leftovers.append(Leftover(start, end, match.group(), reason, guard))
    leftovers.sort(key=lambda leftover: leftover.start)
    return RewriteResult(_splice(text, edits), dict(counts), tuple(leftovers))


def line_locator(text: str) -> Callable[[int], tuple[int, int]]:
    """Return a function mapping an offset of ``text`` to its 1-based (line, column)."""
    line_starts = [0] + [match.end() for match in re.finditer("\n", text)]

    def locate(offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(line_starts, offset)
        return line, offset - line_starts[line - 1] + 1

    return locate


class _DisjointSpans:
    """Non-overlapping half-open spans, sorted, so an overlap test is a bisection, not a scan.

    A file with thousands of matches would otherwise cost a quadratic number of comparisons.
    """

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def overlaps(self, start: int, end: int) -> bool:
        """Whether ``[start, end)`` overlaps a span already held."""
        index = bisect.bisect_right(self._starts, start)
        before = index > 0 and self._ends[index - 1] > start
        after = index < len(self._starts) and self._starts[index] < end
        return before or after

    def claim(self, start: int, end: int) -> bool:
        """Hold ``[start, end)`` unless it overlaps a held span; return whether it was taken."""
        if self.overlaps(start, end):
            return False
        index = bisect.bisect_right(self._starts, start)
        self._starts.insert(index, start)
        self._ends.insert(index, end)
        return True


def _guard(start: int, end: int, protections: Sequence[Protection]) -> Protection | None:
    for protection in protections:
        if start < protection.end and protection.start < end:
            return protection
    return None


def _splice(text: str, edits: list[tuple[int, int, str]]) -> str:
    pieces, cursor = [], 0
    for start, end, replacement in sorted(edits):
        pieces += [text[cursor:start], replacement]
        cursor = end
    pieces.append(text[cursor:])
    return "".join(pieces)
