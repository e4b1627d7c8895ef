"""Labels of published artifacts: text sharing its name with a protected reference in a file.

Results and leaderboards are keyed by a checkpoint's published name, so a label such as
``"AZR-Coder-7b"`` beside its hub id is left as it is.

Design: docs/design/platform.md#labels.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from crsp_ops.migrate.protect import Protection
from crsp_ops.migrate.rules import DETECTION

LABEL_REASON = "label of a published artifact: review (--rename-labels rewrites it)"

_OLD_NAME = "\0"  # stands for any spelling of the old names inside a name key
_OLD_NAME_PATTERN = r"(?:azr|absolute[ \t_-]*zero[ \t_-]*reasoner)"
_NAME_SEPARATORS = re.compile(r"[-_.\s]+")
_SEGMENT_SEPARATORS = re.compile(r"--|[^\w.-]+")  # path, URL, cache-dir and version separators


@dataclass(frozen=True)
class Label:
    """A span of text naming the artifact that ``reference`` (protected) points at."""

    start: int
    end: int
    text: str
    reference: str  # the protected reference's text

    def protection(self) -> Protection:
        """This label as a span the rewrite leaves alone."""
        return Protection(self.start, self.end, LABEL_REASON, "label")


def name_key(name: str) -> tuple[str, ...]:
    """``name`` folded for comparison: old names as one token, lower case, no separators.

    >>> name_key("AZR-Coder-7b") == name_key("Absolute_Zero_Reasoner-Coder-7b")
    True
    """
    folded = DETECTION.sub(f"-{_OLD_NAME}-", name).lower()
    return tuple(token for token in _NAME_SEPARATORS.split(folded) if token)


def artifact_names(reference: str) -> list[str]:
    """The segments of a reference's text that name an artifact after the old names.

    >>> artifact_names("~/.cache/hub/models--andrewzh--Absolute_Zero_Reasoner-Coder-3b/snapshots")
    ['Absolute_Zero_Reasoner-Coder-3b']
    """
    names = []
    for segment in _SEGMENT_SEPARATORS.split(reference):
        segment = segment.strip(".-")
        if DETECTION.search(segment) and any(token != _OLD_NAME for token in name_key(segment)):
            names.append(segment)
    return names


def find_labels(text: str, protections: Sequence[Protection]) -> list[Label]:
    """Spans of ``text`` outside ``protections`` that share a name with a protected artifact.

    Args:
        text: file contents.
        protections: the file's protected spans; only those naming an artifact (not citations,
            blobs or ``--keep`` matches) and holding an old name can have labels.

    Returns:
        Labels in document order, none overlapping another or any protection.
    """
    references: dict[tuple[str, ...], str] = {}
    for protection in protections:
        reference = text[protection.start : protection.end]
        if protection.names_artifact and DETECTION.search(reference):
            for name in artifact_names(reference):
                references.setdefault(name_key(name), reference)
    labels: list[Label] = []
    taken = [(p.start, p.end) for p in protections]
    for key, reference in references.items():
        for match in _label_pattern(key).finditer(text):
            span = match.span()
            if not any(span[0] < end and start < span[1] for start, end in taken):
                taken.append(span)
                labels.append(Label(*span, match.group(), reference))
    return sorted(labels, key=lambda label: label.start)


def _label_pattern(key: tuple[str, ...]) -> re.Pattern[str]:
    tokens = [_OLD_NAME_PATTERN if token == _OLD_NAME else re.escape(token) for token in key]
    # Whole names only: ``AZR-Coder-7b-instruct`` and ``AZR-Coder-7b.yaml`` are other things.
    return re.compile(
        r"(?<![\w.-])" + r"[ \t_.-]*".join(tokens) + r"(?![\w-]|\.\w)", re.IGNORECASE
    )
