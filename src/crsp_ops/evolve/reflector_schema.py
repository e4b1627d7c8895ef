"""The reflector's strict JSON schema and the validation of its replies after parsing.

The schema (OpenAI structured outputs, ``strict: true``) requires exactly ``deltas`` (exactly
the cluster ids, numbers) and ``summary``. Servers differ in how strictly they enforce it, so
every reply is validated again here: exact keys, finite numbers, optional clamp.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.steering.deltas import Deltas, validate_deltas

SCHEMA_NAME = "reflector_output"


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


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} in reply")


def parse_reply(content: str | None, *, n_clusters: int, clamp: float | None) -> ReflectorReply:
    """Parse and validate a reply's content.

    Raises:
        ValueError: not JSON, NaN/Infinity, wrong top-level keys, wrong delta keys, a value that
            is not a finite number, or a summary that is not a non-empty string.

    >>> parse_reply('{"deltas": {"0": 9, "1": -1}, "summary": "s"}', n_clusters=2, clamp=5.0)
    ReflectorReply(deltas={'0': 5.0, '1': -1.0}, summary='s')
    """
    if not content or not content.strip():
        raise ValueError("empty reply")
    try:
        data = json.loads(content, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ValueError(f"reply is not JSON ({error.msg} at char {error.pos})") from None
    if not isinstance(data, dict):
        raise ValueError(f"reply must be a JSON object, got {type(data).__name__}")
    if set(data) != {"deltas", "summary"}:
        raise ValueError(f"reply keys must be exactly deltas and summary, got {sorted(data)}")
    if not isinstance(data["summary"], str) or not data["summary"].strip():
        raise ValueError("summary must be a non-empty string")
    deltas = validate_deltas(data["deltas"], n_clusters=n_clusters, clamp=clamp)
    return ReflectorReply(deltas=deltas, summary=data["summary"].strip())
