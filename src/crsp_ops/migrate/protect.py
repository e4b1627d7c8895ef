"""Spans of text that name something outside the codebase and so must never be rewritten.

URLs, Hugging Face hub ids (``andrewzh/Absolute_Zero_Reasoner-Coder-7b`` names a published
model, renaming it would point at nothing), citation keys and BibTeX entries (they name the
original paper), opaque base64-like blobs, and whatever the user's ``--keep`` patterns match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crsp_ops.migrate.rules import DETECTION

URL_REASON = "URL"
HUB_ID_REASON = "hub model id"
CITATION_REASON = "citation"
BLOB_REASON = "opaque data (base64-like)"

_URL_CHARS = r"[^\s<>\"'`()\[\]{}]"
_URL = re.compile(rf"(?:\b[a-zA-Z][a-zA-Z0-9+.-]*://|\bwww\.|\bgit@){_URL_CHARS}+")
# A bare domain counts only when a path follows, so ``config.azr.io`` attribute chains do not.
_BARE_DOMAIN = re.compile(
    rf"\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|ai|co|edu|dev|gov|app)/{_URL_CHARS}*"
)
# ``org/name`` with exactly two segments: not preceded by a path or URL character, not followed
# by a further ``/segment``.
_HUB_ID = re.compile(r"(?<![\w./~$@:\\-])([A-Za-z0-9][\w.-]*)/([\w.-]*[A-Za-z0-9])(?![\w/])")
_LATEX_CITE = re.compile(r"\\[a-zA-Z]*cite[a-zA-Z]*\*?(?:\[[^\]]*\])*\{[^}]*\}")
_PANDOC_CITE = re.compile(r"\[(?:[^\]\n]*?[\s;])?-?@[\w:.#$%&+?<>~/-]+[^\]\n]*\]")
_BIBTEX_START = re.compile(r"@[A-Za-z]+\s*\{")
_BLOB = re.compile(r"[A-Za-z0-9+/]{80,}={0,2}")

# Extensions that make ``dir/name.ext`` a file path rather than a hub id.
FILE_EXTENSIONS = frozenset(
    "py pyi sh bash zsh yaml yml json jsonl toml cfg ini txt md rst tex bib png jpg jpeg gif svg "
    "pdf csv tsv parquet arrow pt pth bin safetensors ckpt ipynb log html css js ts".split()
)


@dataclass(frozen=True)
class Protection:
    """A half-open span ``[start, end)`` of a text that no rule may rewrite, and why."""

    start: int
    end: int
    reason: str


def keep_reason(pattern: str) -> str:
    """The report reason for a span protected by the user's ``--keep`` pattern."""
    return f"--keep {pattern!r}"


def find_protections(
    text: str, keep: Sequence[re.Pattern[str]] = (), directory_names: Iterable[str] = ()
) -> list[Protection]:
    """Return every protected span of ``text``.

    Args:
        text: file contents.
        keep: the user's extra patterns; every match is protected.
        directory_names: names of the tree's directories; ``configs/x`` is then a path, not a
            hub id, even when its name looks like a model's.
    """
    spans = [Protection(*m.span(), URL_REASON) for m in _URL.finditer(text)]
    spans += [Protection(*m.span(), URL_REASON) for m in _BARE_DOMAIN.finditer(text)]
    spans += _hub_ids(text, frozenset(directory_names))
    spans += [Protection(*m.span(), CITATION_REASON) for m in _LATEX_CITE.finditer(text)]
    spans += [Protection(*m.span(), CITATION_REASON) for m in _PANDOC_CITE.finditer(text)]
    spans += _bibtex_entries(text)
    spans += [Protection(*m.span(), BLOB_REASON) for m in _BLOB.finditer(text) if _is_blob(m[0])]
    spans += keep_protections(text, keep)
    return spans


def keep_protections(text: str, keep: Sequence[re.Pattern[str]]) -> list[Protection]:
    """Spans of ``text`` matched by the user's ``--keep`` patterns."""
    return [
        Protection(*m.span(), keep_reason(pattern.pattern))
        for pattern in keep
        for m in pattern.finditer(text)
        if m.end() > m.start()
    ]


def _hub_ids(text: str, directory_names: frozenset[str]) -> list[Protection]:
    spans = []
    for match in _HUB_ID.finditer(text):
        org, name = match.group(1), match.group(2)
        if org in directory_names or DETECTION.search(org) or not DETECTION.search(name):
            continue  # a path in this tree, or nothing to protect
        extension = name.rsplit(".", 1)[-1].lower() if "." in name else ""
        if extension in FILE_EXTENSIONS:
            continue
        # Published repositories carry a size, a variant or capitals; plain snake_case
        # ``outputs/azr_run`` reads as a path the code creates at run time.
        if any(c.isupper() or c.isdigit() or c == "-" for c in name):
            spans.append(Protection(*match.span(), HUB_ID_REASON))
    return spans


def _bibtex_entries(text: str) -> list[Protection]:
    """Whole ``@kind{key, ...}`` entries: key, title and authors all name the cited work."""
    spans = []
    for match in _BIBTEX_START.finditer(text):
        depth, index = 1, match.end()
        while index < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[index], 0)
            index += 1
        if depth == 0:
            spans.append(Protection(match.start(), index, CITATION_REASON))
    return spans


def _is_blob(token: str) -> bool:
    return any(c.isupper() for c in token) and any(c.islower() for c in token) and any(
        c.isdigit() for c in token
    )
