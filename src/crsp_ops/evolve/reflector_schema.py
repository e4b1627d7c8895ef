"""The reflector's strict JSON schema and the validation of its replies after parsing.

The schema (OpenAI structured outputs, ``strict: true``) requires exactly ``deltas`` (exactly
the cluster ids, numbers) and ``summary``. Servers differ in how strictly they enforce it, so
every reply is validated again here: exact keys, finite numbers, optional clamp, and a summary
of at most ``MAX_SUMMARY_CHARS`` characters.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.strict_json import InvalidJSON, loads
from crsp_ops.steering.deltas import Deltas, validate_deltas

SCHEMA_NAME = "reflector_output"
MAX_SUMMARY_CHARS = 4000  # one iteration's summary update; the summary is resent every time
MAX_CONTENT_CHARS = 1024 * 1024


def reflector_schema(cluster_ids: Sequence[str]) -> dict[str, Any]:
    """The JSON schema of a reply for these cluster ids.

    >>> reflector_schema(["0"])["properties"]["deltas"]["required"]
    ['0']
    """
    ids = list(cluster_ids)
    return {
        "type": "object",
        "properties": {
            "deltas": {
                "type": "object",
                "properties": {cid: {"type": "number"} for cid in ids},
                "required": ids,
                "additionalProperties": False,
            },
            "summary": {"type": "string"},
        },
        "required": ["deltas", "summary"],
        "additionalProperties": False,
    }


def response_format(cluster_ids: Sequence[str]) -> dict[str, Any]:
    """The ``response_format`` request field."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": SCHEMA_NAME, "strict": True, "schema": reflector_schema(cluster_ids),
        },
    }


@dataclass(frozen=True)
class ReflectorReply:
    """A validated reply."""

    deltas: Deltas
    summary: str


def validate_reply(
    data: Any, *, n_clusters: int, clamp: float | None,
    max_summary_chars: int = MAX_SUMMARY_CHARS,
) -> ReflectorReply:
    """Check a parsed reply against the schema and the content rules.

    Raises:
        ValueError: not an object, wrong top-level keys, wrong delta keys, a value that is not
            a finite number, or a summary that is not a non-empty string of at most
            ``max_summary_chars`` characters.
    """
    if not isinstance(data, dict):
        raise ValueError(f"reply must be a JSON object, got {type(data).__name__}")
    if set(data) != {"deltas", "summary"}:
        raise ValueError(f"reply keys must be exactly deltas and summary, got "
                         f"{sorted(str(k)[:40] for k in data)[:10]}")
    summary = data["summary"]
    if not isinstance(summary, str) or not summary.strip():
        raise ValueError("summary must be a non-empty string")
    if len(summary.strip()) > max_summary_chars:
        raise ValueError(f"summary of {len(summary.strip())} characters "
                         f"(at most {max_summary_chars})")
    deltas = validate_deltas(data["deltas"], n_clusters=n_clusters, clamp=clamp)
    return ReflectorReply(deltas=deltas, summary=summary.strip())


def parse_reply(
    content: str | None, *, n_clusters: int, clamp: float | None,
    max_summary_chars: int = MAX_SUMMARY_CHARS,
) -> ReflectorReply:
    """Parse (strictly: see ``strict_json``) and validate a reply's content.

    Raises:
        ValueError: empty, not acceptable JSON, or a reply ``validate_reply`` rejects.

    >>> parse_reply('{"deltas": {"0": 9, "1": -1}, "summary": "s"}', n_clusters=2, clamp=5.0)
    ReflectorReply(deltas={'0': 5.0, '1': -1.0}, summary='s')
    """
    if not content or not content.strip():
        raise ValueError("empty reply")
    try:
        data = loads(content, max_chars=MAX_CONTENT_CHARS)
    except InvalidJSON as error:
        raise ValueError(f"reply is {error}" if str(error).startswith("not JSON")
                         else f"reply rejected: {error}") from None
    return validate_reply(data, n_clusters=n_clusters, clamp=clamp,
                          max_summary_chars=max_summary_chars)
