"""Spans of text that name something outside the codebase and so must never be rewritten.

Published artifacts' names (hub ids and their caches, URLs, MLflow and W&B URIs), citation keys,
opaque blobs and the user's ``--keep`` patterns; each span has a ``reason`` and a ``kind``.

Design: docs/design/platform.md#protect.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from crsp_ops.migrate.rules import DETECTION

URL_REASON = "URL"
HUB_ID_REASON = "hub model id"
HUB_CACHE_REASON = "hub cache directory"
MLFLOW_REASON = "MLflow URI"
CITATION_REASON = "citation"
BLOB_REASON = "opaque data (base64-like)"
# Kinds of URL, by service, for the report.
HF_URL_KIND = "Hugging Face URL"
WANDB_KIND = "W&B URI"
MLFLOW_KIND = MLFLOW_REASON

_URL_CHARS = r"[^\s<>\"'`()\[\]{}]"
_URL = re.compile(rf"(?:\b[a-zA-Z][a-zA-Z0-9+.-]*://|\bwww\.|\bgit@){_URL_CHARS}+")
# A bare domain counts only when a path follows, so ``config.azr.io`` attribute chains do not.
_BARE_DOMAIN = re.compile(
    rf"\b(?:[a-z0-9-]+\.)+(?:com|org|net|io|ai|co|edu|dev|gov|app)/{_URL_CHARS}*"
)
# ``org/name`` with exactly two segments: not preceded by a path or URL character, not followed
# by a further ``/segment``.
# ``models--org--name`` (also ``datasets--``, ``spaces--``): how the hub cache stores a repository.
_HUB_CACHE = re.compile(r"(?<![\w-])(?:models|datasets|spaces)--(?:(?!--)[\w.-])+--[\w.-]*[\w.]")
# MLflow URIs with a single slash (``scheme://`` forms are caught as URLs).
_MLFLOW_URI = re.compile(rf"(?<![\w-])(?:runs|models|mlflow-artifacts):/{_URL_CHARS}+")
# String arguments that are repository ids: ``repo_id=…`` anywhere (Python keyword, YAML key,
# shell assignment), and the first argument of the hub and W&B loaders.
_REPO_ID_ARGUMENT = re.compile(
    r"""\brepo_id\s*[=:]\s*(?:(['"])([^'"\n$]+)\1|([^\s'"(),;$][^\s'"(),;]*))"""
)
_LOADER_ARGUMENT = re.compile(
    r"""\b(from_pretrained|snapshot_download|hf_hub_download|load_dataset|use_artifact|"""
    r"""artifact)\(\s*(?:repo_id\s*=\s*|path\s*=\s*)?r?(['"])([^'"\n]+)\2"""
)
# Loaders whose argument is a local path when it looks like one; W&B artifact names are never.
_PATH_TOLERANT_LOADERS = frozenset({"from_pretrained", "load_dataset"})
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
    reason: str  # why an occurrence inside is left, e.g. "URL"
    kind: str = ""  # the reference's kind in the report, e.g. "Hugging Face URL"; "" = reason

    @property
    def report_kind(self) -> str:
        """The kind this span is listed under in the report."""
        return self.kind or self.reason

    @property
    def names_artifact(self) -> bool:
        """Whether the span names something published (not a citation, blob or --keep match)."""
        return self.reason not in (CITATION_REASON, BLOB_REASON) and not self.reason.startswith(
            "--keep"
        )


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
        directory_names: names of the tree's directories; ``configs/<name>`` is then a path, not a
            hub id, even when its name looks like a model's.
    """
    directory_names = frozenset(directory_names)
    # Order is priority: an occurrence inside several spans is credited to the first.
    spans = hub_cache_protections(text)
    spans += _loader_arguments(text, directory_names)
    spans += [Protection(*m.span(), MLFLOW_REASON) for m in _MLFLOW_URI.finditer(text)]
    spans += _urls(_URL, text) + _urls(_BARE_DOMAIN, text)
    spans += _hub_ids(text, directory_names)
    spans += [Protection(*m.span(), CITATION_REASON) for m in _LATEX_CITE.finditer(text)]
    spans += [Protection(*m.span(), CITATION_REASON) for m in _PANDOC_CITE.finditer(text)]
    spans += _bibtex_entries(text)
    spans += [Protection(*m.span(), BLOB_REASON) for m in _BLOB.finditer(text) if _is_blob(m[0])]
    spans += keep_protections(text, keep)
    return spans


def hub_cache_protections(text: str) -> list[Protection]:
    """Hub cache directory names (``models--org--name``) in ``text``.

    >>> [p.reason for p in hub_cache_protections("hub/models--org--azr-7b/snapshots")]
    ['hub cache directory']
    """
    return [Protection(*m.span(), HUB_CACHE_REASON) for m in _HUB_CACHE.finditer(text)]


def is_hub_cache_name(name: str) -> bool:
    """Whether a file or directory name is a hub cache directory's (``models--org--name``)."""
    return _HUB_CACHE.fullmatch(name) is not None


def url_kind(url: str) -> str:
    """The service a URL (or URI) points at, as a report kind.

    >>> url_kind("hf://datasets/org/x"), url_kind("https://wandb.ai/u/p"), url_kind("s3://b/k")
    ('Hugging Face URL', 'W&B URI', 'URL')
    """
    lowered = url.lower()
    scheme, _, rest = lowered.partition("://")
    if not rest:
        scheme, rest = "", lowered
    host = rest.removeprefix("www.").split("/", 1)[0]
    if scheme == "hf" or host in ("huggingface.co", "hf.co"):
        return HF_URL_KIND
    if scheme.startswith("wandb") or host == "wandb.ai" or host.endswith(".wandb.ai"):
        return WANDB_KIND
    if scheme.startswith("mlflow") or scheme in ("runs", "models"):
        return MLFLOW_KIND
    return URL_REASON


def keep_protections(text: str, keep: Sequence[re.Pattern[str]]) -> list[Protection]:
    """Spans of ``text`` matched by the user's ``--keep`` patterns."""
    return [
        Protection(*m.span(), keep_reason(pattern.pattern))
        for pattern in keep
        for m in pattern.finditer(text)
        if m.end() > m.start()
    ]


def _urls(pattern: re.Pattern[str], text: str) -> list[Protection]:
    """URL spans, without the sentence punctuation that may follow a URL in prose."""
    spans = []
    for match in pattern.finditer(text):
        url = match[0].rstrip(".,;:!?")
        if url:
            spans.append(Protection(match.start(), match.start() + len(url), URL_REASON,
                                    url_kind(url)))
    return spans


def _loader_arguments(text: str, directory_names: frozenset[str]) -> list[Protection]:
    """String arguments naming a hub repository or a W&B artifact, as written in code."""
    spans = []
    for match in _REPO_ID_ARGUMENT.finditer(text):
        group = 2 if match.group(2) is not None else 3
        spans.append(Protection(*match.span(group), "repo_id argument"))
    for match in _LOADER_ARGUMENT.finditer(text):
        loader, value = match.group(1), match.group(3)
        if loader in _PATH_TOLERANT_LOADERS and _is_local_path(value, directory_names):
            continue  # a checkpoint the code saves itself: migrated like any other path
        kind = WANDB_KIND if "artifact" in loader else f"{loader} argument"
        spans.append(Protection(*match.span(3), f"{loader} argument", kind))
    return spans


def _is_local_path(value: str, directory_names: frozenset[str]) -> bool:
    """Whether a loader's string argument reads as a path rather than ``org/name`` or ``name``."""
    if value.startswith((".", "/", "~", "$")) or value.count("/") > 1:
        return True
    first = value.split("/", 1)[0]
    return first in directory_names or (
        "/" in value and value.rsplit(".", 1)[-1].lower() in FILE_EXTENSIONS
    )


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
