"""The AZR → CRSP identifier rules and the identifier-boundary test they share.

The default rules are the seed's mapping and nothing more; users add spellings with
``--rule OLD=NEW``. Rules are case-sensitive and applied longest (most specific) first, so
``absolute_zero_reasoner`` is rewritten as a whole before ``azr`` could ever match a piece of it.
A match is rewritten only when it is a whole identifier *segment*: snake_case, kebab-case,
dotted and path separators, digits and camelCase humps all delimit segments, so
``main_azr_ppo`` and ``AzrConfig`` are rewritten but ``hazrat`` is not.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

PROSE_TARGET = "Cognition via Rewarded Self-Play"

# Whitespace between the words of a prose name: spaces, optionally one line break (wrapped
# Markdown), never a blank line (that would join two paragraphs).
_PROSE_GAP = r"(?:[ \t]+(?:\r?\n[ \t]*)?|\r?\n[ \t]*)"

# Any spelling of either name, case-insensitive: used to find what the rules did not rewrite.
DETECTION = re.compile(r"azr|absolute[\s_-]*zero[\s_-]*reasoner", re.IGNORECASE)


@dataclass(frozen=True)
class Rule:
    """One case-sensitive rewrite of every boundary-delimited ``pattern`` match to ``target``."""

    source: str  # canonical spelling; with target it names the rule in reports
    target: str  # replacement text
    pattern: re.Pattern[str]  # what the source looks like in text (prose allows line wraps)

    @property
    def name(self) -> str:
        """Stable key of the rule in reports, e.g. ``"azr -> crsp"``."""
        return f"{self.source} -> {self.target}"

    def render(self, matched: str) -> str:
        r"""Return the replacement for ``matched``, keeping a line break where prose was wrapped.

        >>> PROSE_RULE.render("Absolute Zero\n  Reasoner")
        'Cognition via Rewarded\n  Self-Play'
        """
        gap = re.search(r"[ \t]*\r?\n[ \t]*", matched)
        if gap is None or " " not in self.target:
            return self.target
        head, _, tail = self.target.rpartition(" ")
        return head + gap.group(0) + tail


def literal_rule(source: str, target: str) -> Rule:
    """A rule matching ``source`` exactly."""
    return Rule(source, target, re.compile(re.escape(source)))


def prose_rule(source: str, target: str) -> Rule:
    """A rule matching the words of ``source`` separated by spaces or a single line break."""
    words = source.split()
    return Rule(source, target, re.compile(_PROSE_GAP.join(re.escape(w) for w in words)))


def by_specificity(rules: list[Rule]) -> tuple[Rule, ...]:
    """Order rules longest source first; ties keep their given order."""
    return tuple(sorted(rules, key=lambda rule: -len(rule.source)))


PROSE_RULE = prose_rule("Absolute Zero Reasoner", PROSE_TARGET)

# The seed's IDENTIFIER_MAPPING, exactly: nothing else is rewritten by default. Other spellings
# (``Azr``, ``Absolute_Zero_Reasoner``, ``AbsoluteZeroReasoner``, ``Absolute-Zero-Reasoner``)
# are variants no rule names: published models and the upstream repository carry them, so they
# are reported ("left: not a mapping rule") and rewritten only through ``--rule`` additions.
DESIGN_MAPPING: dict[str, str] = {
    "azr": "crsp",
    "absolute_zero_reasoner": "rewarded_self_play",
    "absolute zero reasoner": PROSE_TARGET,
    "AZR": "CRSP",
    "Absolute Zero Reasoner": PROSE_TARGET,
}


def make_rule(source: str, target: str) -> Rule:
    """A prose rule when ``source`` has several words, else a literal one."""
    return prose_rule(source, target) if len(source.split()) > 1 else literal_rule(source, target)


DEFAULT_RULES: tuple[Rule, ...] = by_specificity(
    [make_rule(source, target) for source, target in DESIGN_MAPPING.items()]
)


def parse_rule(spec: str) -> Rule:
    """Parse a ``--rule OLD=NEW`` addition.

    Raises:
        ValueError: the spec has no ``=``, an empty side, an ``OLD`` that is not a spelling of
            the old names, or a ``NEW`` that still contains one (a second run would rewrite it
            again, so the migration would never settle).

    >>> parse_rule("Azr=Crsp").name
    'Azr -> Crsp'
    """
    source, equals, target = spec.partition("=")
    source, target = source.strip(), target.strip()
    if not equals or not source or not target:
        raise ValueError(f"--rule {spec!r} must look like OLD=NEW, e.g. --rule Azr=Crsp")
    if DETECTION.search(source) is None:
        raise ValueError(
            f"--rule {spec!r}: OLD must contain a spelling of 'AZR' or 'Absolute Zero "
            "Reasoner' (the migration only looks at text holding one)"
        )
    if DETECTION.search(target) is not None:
        raise ValueError(
            f"--rule {spec!r}: NEW must not contain an old name, or a second run would "
            "rewrite it again"
        )
    return make_rule(source, target)


def with_additions(base: Sequence[Rule], additions: Sequence[Rule]) -> tuple[Rule, ...]:
    """``base`` plus ``additions``, most specific first; an addition replaces a same-source rule.

    >>> [rule.name for rule in with_additions(DEFAULT_RULES, [parse_rule("azr=x")])][-1]
    'azr -> x'
    """
    added = {rule.source for rule in additions}
    return by_specificity([rule for rule in base if rule.source not in added] + list(additions))


# Spellings the migration introduces; validation uses them to spot migrated references.
TARGET_TOKENS: tuple[str, ...] = ("rewarded_self_play", "crsp", "CRSP", "Crsp")


def at_identifier_boundary(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a whole identifier segment rather than part of a word.

    A neighbour that is not a letter (digit, ``_``, ``-``, ``.``, ``/``, space, ...) always
    delimits. A letter delimits only at a camelCase hump: ``runAZR``, ``azrTrainer``,
    ``AzrConfig``, or an acronym followed by a capitalised word (``AZRTrainer``).

    >>> at_identifier_boundary("main_azr_ppo", 5, 8), at_identifier_boundary("hazrat", 1, 4)
    (True, False)
    """
    before = text[start - 1] if start > 0 else ""
    after = text[end] if end < len(text) else ""
    after_next = text[end + 1] if end + 1 < len(text) else ""
    first, last = text[start], text[end - 1]
    left_ok = not before.isalpha() or (first.isupper() and before.islower())
    if not after.isalpha():
        right_ok = True
    elif last.islower():
        right_ok = after.isupper()
    else:
        right_ok = after.isupper() and after_next.islower()
    return left_ok and right_ok
