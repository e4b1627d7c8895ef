"""The one boundary where a reflector's HTTP reply becomes validated deltas (or a reason).

``read_reply`` returns a ``ReplyOutcome`` (the validated reply or why it was rejected), never
an exception.

Design: docs/design/evolve.md#reflector_reply.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crsp_ops.evolve.reflector_schema import (
    MAX_SUMMARY_CHARS,
    ReflectorReply,
    validate_reply,
)
from crsp_ops.evolve.strict_json import InvalidJSON, loads

MAX_BODY_BYTES = 1024 * 1024  # a reply of a few dozen deltas and a summary is a few KiB
MAX_SHOWN_CHARS = 64 * 1024  # most of a rejected body kept in the exchange record


@dataclass(frozen=True)
class HttpReply:
    """One HTTP response, as received."""

    status: int
    content_type: str
    body: bytes


@dataclass(frozen=True)
class ReplyOutcome:
    """What one reply yields: the validated reply, or why there is none."""

    reply: ReflectorReply | None  # None when rejected
    error: str | None  # why it was rejected (None when accepted)
    raw_reply: str  # the message content (or the body when no content was found), printable
    prompt_tokens: int = 0
    completion_tokens: int = 0


def printable(text: str, limit: int = MAX_SHOWN_CHARS) -> str:
    r"""``text`` cut to ``limit`` characters, lone surrogates escaped (safe to write as UTF-8).

    >>> printable("ok\ud800")
    'ok\\ud800'
    """
    cut = text[:limit] + ("[…truncated]" if len(text) > limit else "")
    return cut.encode("utf-8", "backslashreplace").decode("utf-8")


def _tokens(usage: Any, key: str) -> int:
    value = usage.get(key) if isinstance(usage, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return value


def _content(envelope: Any) -> str:
    if not isinstance(envelope, dict):
        raise InvalidJSON(f"body is a JSON {type(envelope).__name__}, not a chat completion")
    choices = envelope.get("choices")
    if not isinstance(choices, list) or not choices:
        raise InvalidJSON("chat completion without choices")
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise InvalidJSON("first choice has no message object")
    content = message.get("content")
    if not isinstance(content, str):
        refusal = message.get("refusal")
        if isinstance(refusal, str) and refusal:
            raise InvalidJSON(f"the model refused: {refusal[:200]}")
        raise InvalidJSON(f"message content is {type(content).__name__}, not a string")
    return content


def read_reply(
    http: HttpReply, *, n_clusters: int, clamp: float | None,
    max_summary_chars: int = MAX_SUMMARY_CHARS, max_body_bytes: int = MAX_BODY_BYTES,
) -> ReplyOutcome:
    """Turn one HTTP reply into validated deltas or a rejection reason (never raises).

    Args:
        http: the response as received.
        n_clusters: replies must give exactly the cluster ids ``0..n_clusters-1``.
        clamp: clip deltas to ``[-clamp, clamp]`` (``None``: no clip).
        max_summary_chars: longest accepted summary.
        max_body_bytes: longest accepted body.
    """
    body_text = printable(http.body[:MAX_SHOWN_CHARS * 4].decode("utf-8", "replace"))
    if not 200 <= http.status < 300:
        return ReplyOutcome(None, f"HTTP {http.status}", body_text)
    try:
        envelope = loads(http.body, max_chars=max_body_bytes)
    except InvalidJSON as error:
        kind = http.content_type or "no content type"
        return ReplyOutcome(None, f"invalid reply body ({kind}): {error}", body_text)
    usage = envelope.get("usage") if isinstance(envelope, dict) else None
    tokens = {"prompt_tokens": _tokens(usage, "prompt_tokens"),
              "completion_tokens": _tokens(usage, "completion_tokens")}
    try:
        content = _content(envelope)
    except InvalidJSON as error:
        return ReplyOutcome(None, f"invalid reply: {error}", body_text, **tokens)
    try:
        data = loads(content, max_chars=max_body_bytes)
        reply = validate_reply(data, n_clusters=n_clusters, clamp=clamp,
                               max_summary_chars=max_summary_chars)
    except ValueError as error:  # InvalidJSON, or the schema/content rules
        return ReplyOutcome(None, f"invalid reply: {error}", printable(content), **tokens)
    return ReplyOutcome(reply, None, printable(content), **tokens)
