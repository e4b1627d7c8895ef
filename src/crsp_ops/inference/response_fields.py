"""Where each engine puts token ids on an OpenAI-compatible chat response, read in one place.

Every engine's spelling is accepted; two spellings that disagree are an error, not a guess.

Design: docs/design/inference.md#response_fields.
"""

from __future__ import annotations

from typing import Any

RESPONSE_TOKEN_ID_FIELDS = ("token_ids", "response_token_ids")
"""Choice fields holding the generated ids (vLLM and older SGLang; SGLang >= 0.5.x)."""

PROMPT_TOKEN_ID_FIELD = "prompt_token_ids"
"""The prompt ids: on the choice (SGLang) or on the response itself (vLLM)."""


def field_value(obj: Any, name: str) -> Any:
    """Read ``name`` from a dict, an SDK object, or an SDK object's ``model_extra``; else None."""
    if obj is None:
        return None
    if isinstance(obj, dict):
        return obj.get(name)
    value = getattr(obj, name, None)
    if value is None:
        extra = getattr(obj, "model_extra", None) or {}
        value = extra.get(name)
    return value


def engine_response_ids(choice: Any) -> list[int] | None:
    """The generated token ids an engine put on ``choice``, or ``None`` when it sent none.

    Raises:
        ValueError: two spellings are present and hold different ids.

    >>> engine_response_ids({"response_token_ids": [5, 6]})
    [5, 6]
    >>> engine_response_ids({"token_ids": [5]}), engine_response_ids({"message": {}})
    ([5], None)
    """
    found: dict[str, list[int]] = {}
    for name in RESPONSE_TOKEN_ID_FIELDS:
        value = field_value(choice, name)
        if value is not None:
            found[name] = [int(token) for token in value]
    if not found:
        return None
    values = list(found.values())
    if any(value != values[0] for value in values[1:]):
        raise ValueError(
            f"the choice's {' and '.join(found)} disagree ({len(values[0])} vs "
            f"{len(values[1])} ids): the server's response is inconsistent"
        )
    return values[0]


def engine_prompt_ids(choice: Any, response: Any = None) -> list[int] | None:
    """The prompt ids the server reports: on the choice (SGLang), else on the response (vLLM)."""
    for holder in (choice, response):
        value = field_value(holder, PROMPT_TOKEN_ID_FIELD)
        if value is not None:
            return [int(token) for token in value]
    return None
