"""Pure request parsing and response shaping for the local OpenAI-compatible server.

No I/O; follows vLLM where engines differ, and spells token ids as the engine the request
speaks would.

Design: docs/design/inference.md#server_protocol.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.inference.completions import SamplingParams
from crsp_ops.steering.bias import STEER_DELTAS_KEY

logger = logging.getLogger(__name__)

MAX_TOP_LOGPROBS = 20  # vLLM's default --max-logprobs
VLLM_STEERING_FIELD = "vllm_xargs"
SGLANG_STEERING_FIELD, SGLANG_PROCESSOR_FIELD = "custom_params", "custom_logit_processor"
KNOWN_FIELDS = frozenset({
    "model", "messages", "stream", "n", "max_tokens", "max_completion_tokens", "temperature",
    "top_p", "seed", "logprobs", "top_logprobs", "return_token_ids", "return_prompt_token_ids",
    "return_tokens_as_token_ids", VLLM_STEERING_FIELD, SGLANG_STEERING_FIELD,
    SGLANG_PROCESSOR_FIELD, "top_k", "min_p", "repetition_penalty", "chat_template_kwargs",
})
"""Fields the server acts on; anything else is ignored (and logged), as vLLM does."""
SGLANG_ONLY_FIELDS = ("return_prompt_token_ids", SGLANG_STEERING_FIELD, SGLANG_PROCESSOR_FIELD)


class BadRequestError(ValueError):
    """The request is malformed; answered with a JSON error body and ``status``."""

    def __init__(self, message: str, status: int = 400, param: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.param = param


@dataclass(frozen=True)
class ChatRequest:
    """The parts of a chat-completions request the local server acts on."""

    messages: tuple[dict[str, str], ...]
    params: SamplingParams
    logprobs: bool  # return per-token logprobs
    top_logprobs: int  # alternatives per position
    return_token_ids: bool  # vLLM: choice token_ids + top-level prompt_token_ids
    return_prompt_token_ids: bool  # SGLang: choice-level prompt_token_ids
    tokens_as_token_ids: bool  # vLLM: logprob tokens as "token_id:N"
    deltas: tuple[float, ...] | None  # steering deltas from vllm_xargs or custom_params
    sglang_style: bool = False  # the request speaks SGLang: answer with its field names
    chat_template_kwargs: dict[str, Any] | None = None  # extra chat-template variables


def error_body(message: str, status: int, param: str | None = None) -> dict[str, Any]:
    """OpenAI-shaped error JSON (the ``openai`` client reads ``error.message``)."""
    kind = "BadRequestError" if status == 400 else "NotFoundError" if status == 404 else "Error"
    return {"error": {"message": message, "type": kind, "param": param, "code": status}}


def _flag(body: dict, name: str) -> bool:
    value = body.get(name)
    if value is None:
        return False
    if not isinstance(value, bool):
        raise BadRequestError(f"{name} must be a boolean, got {value!r}", param=name)
    return value


def _number(body: dict, name: str, default: float, low: float, high: float) -> float:
    value = body.get(name)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise BadRequestError(
            f"{name} must be a number in [{low}, {high}], got {value!r}", param=name
        )
    return float(value)


def _integer(body: dict, name: str, low: int, high: int | None = None) -> int | None:
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (
        high is not None and value > high
    ):
        bounds = f">= {low}" if high is None else f"in [{low}, {high}]"
        raise BadRequestError(f"{name} must be an integer {bounds}, got {value!r}", param=name)
    return value


def _template_kwargs(body: dict) -> dict[str, Any] | None:
    value = body.get("chat_template_kwargs")
    if value is not None and not isinstance(value, dict):
        raise BadRequestError("chat_template_kwargs must be an object",
                              param="chat_template_kwargs")
    return value or None


def parse_messages(raw: Any) -> tuple[dict[str, str], ...]:
    """Validate ``messages``; list-of-parts content is joined from its text parts."""
    if not isinstance(raw, list) or not raw:
        raise BadRequestError("messages must be a non-empty list", param="messages")
    messages = []
    for position, message in enumerate(raw):
        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
            raise BadRequestError(
                f"messages[{position}] must be an object with a string 'role'", param="messages"
            )
        content = message.get("content")
        if isinstance(content, list):
            parts = [part.get("text") for part in content if isinstance(part, dict)]
            if not all(isinstance(part, str) for part in parts) or not parts:
                raise BadRequestError(
                    f"messages[{position}].content parts must be text parts", param="messages"
                )
            content = "".join(parts)
        if not isinstance(content, str):
            raise BadRequestError(
                f"messages[{position}].content must be a string", param="messages"
            )
        messages.append({"role": message["role"], "content": content})
    return tuple(messages)


def parse_deltas(body: dict) -> tuple[float, ...] | None:
    """Steering deltas from vLLM ``vllm_xargs`` or SGLang ``custom_params`` (``steer_deltas``).

    As in SGLang, ``custom_params`` only counts when a ``custom_logit_processor`` string comes
    with it; without one the deltas are ignored (and logged), which the canary then catches.

    Raises:
        BadRequestError: malformed deltas, or both fields given with different values.
    """
    found = []
    key = STEER_DELTAS_KEY
    for field_name in (VLLM_STEERING_FIELD, SGLANG_STEERING_FIELD):
        holder = body.get(field_name)
        if holder is None:
            continue
        if not isinstance(holder, dict):
            raise BadRequestError(f"{field_name} must be an object", param=field_name)
        raw = holder.get(key)
        if raw is None:
            continue
        if field_name == SGLANG_STEERING_FIELD and not body.get(SGLANG_PROCESSOR_FIELD):
            logger.warning("custom_params without custom_logit_processor: ignored, as SGLang does")
            continue
        if not isinstance(raw, list) or not all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            for v in raw
        ):
            raise BadRequestError(
                f"{field_name}.{key} must be a list of finite numbers", param=field_name
            )
        found.append(tuple(float(v) for v in raw))
    if len(found) == 2 and found[0] != found[1]:
        raise BadRequestError(
            f"{VLLM_STEERING_FIELD}.{key} and {SGLANG_STEERING_FIELD}.{key} disagree; send one"
        )
    return found[0] if found else None


def parse_chat_request(body: Any, served_model: str, default_max_tokens: int) -> ChatRequest:
    """Validate a ``/v1/chat/completions`` body; unknown fields are ignored (as vLLM does).

    Raises:
        BadRequestError: a malformed or unsupported request (404 for an unknown model).
    """
    if not isinstance(body, dict):
        raise BadRequestError("request body must be a JSON object")
    model = body.get("model")
    if model is not None and model != served_model:
        raise BadRequestError(f"The model `{model}` does not exist.", status=404, param="model")
    if body.get("stream"):
        raise BadRequestError("stream=true is not supported by this server", param="stream")
    if body.get("n") not in (None, 1):
        raise BadRequestError("only n=1 is supported", param="n")
    max_tokens = _integer(body, "max_completion_tokens", 1)
    if max_tokens is None:
        max_tokens = _integer(body, "max_tokens", 1)
    top_logprobs = _integer(body, "top_logprobs", 0, MAX_TOP_LOGPROBS) or 0
    logprobs = _flag(body, "logprobs")
    if top_logprobs and not logprobs:
        raise BadRequestError("top_logprobs requires logprobs=true", param="top_logprobs")
    try:
        params = SamplingParams(
            max_new_tokens=max_tokens or default_max_tokens,
            temperature=_number(body, "temperature", 1.0, 0.0, 2.0),
            top_p=_number(body, "top_p", 1.0, 0.0, 1.0),
            seed=_integer(body, "seed", -(2**63)),
            top_k=max(_integer(body, "top_k", -1) or 0, 0),  # vLLM's -1 and 0 both mean off
            min_p=_number(body, "min_p", 0.0, 0.0, 1.0),
            repetition_penalty=_number(body, "repetition_penalty", 1.0, 0.0, 100.0),
        )
    except ValueError as error:
        raise BadRequestError(str(error)) from error
    return ChatRequest(
        messages=parse_messages(body.get("messages")),
        params=params,
        logprobs=logprobs,
        top_logprobs=top_logprobs,
        return_token_ids=_flag(body, "return_token_ids"),
        return_prompt_token_ids=_flag(body, "return_prompt_token_ids"),
        tokens_as_token_ids=_flag(body, "return_tokens_as_token_ids"),
        deltas=parse_deltas(body),
        sglang_style=any(key in body for key in SGLANG_ONLY_FIELDS),
        chat_template_kwargs=_template_kwargs(body),
    )


def token_id_form(choice_logprobs: dict, token_ids: Sequence[int], top_ids: Any = None) -> dict:
    """Rewrite logprob ``token`` strings as vLLM's ``token_id:N`` (bytes dropped: not text)."""
    content = []
    items = zip(choice_logprobs["content"], token_ids, strict=True)
    for position, (item, token_id) in enumerate(items):
        alternatives = item.get("top_logprobs") or []
        ids = top_ids[position] if top_ids is not None else [None] * len(alternatives)
        content.append({
            **item,
            "token": f"token_id:{token_id}",
            "bytes": None,
            "top_logprobs": [
                {**alt, "token": f"token_id:{alt_id}" if alt_id is not None else alt["token"],
                 "bytes": None}
                for alt, alt_id in zip(alternatives, ids, strict=True)
            ],
        })
    return {**choice_logprobs, "content": content}


def chat_response(
    request: ChatRequest,
    choice: dict[str, Any],
    prompt_token_ids: Sequence[int],
    served_model: str,
) -> dict[str, Any]:
    """Assemble the response body around one OpenAI-shaped choice.

    Args:
        request: the parsed request (decides which optional fields are returned).
        choice: ``{"message", "logprobs", "finish_reason", "token_ids", ...}`` for the response.
        prompt_token_ids: ids the model was fed.
        served_model: the model name to echo.
    """
    token_ids = list(choice.get("token_ids") or [])
    shaped: dict[str, Any] = {
        "index": 0,
        "message": {"role": "assistant", "content": choice["message"]["content"]},
        "logprobs": choice.get("logprobs") if request.logprobs else None,
        "finish_reason": choice["finish_reason"],
    }
    if request.sglang_style:  # SGLang 0.5.23: both lists on the choice
        if request.return_prompt_token_ids or request.return_token_ids:
            shaped["prompt_token_ids"] = list(prompt_token_ids)
        if request.return_token_ids:
            shaped["response_token_ids"] = token_ids
    elif request.return_token_ids:  # vLLM: response ids on the choice, prompt ids on top
        shaped["token_ids"] = token_ids
    body: dict[str, Any] = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": served_model,
        "choices": [shaped],
        "usage": {
            "prompt_tokens": len(prompt_token_ids),
            "completion_tokens": len(token_ids),
            "total_tokens": len(prompt_token_ids) + len(token_ids),
        },
    }
    if request.return_token_ids and not request.sglang_style:
        body["prompt_token_ids"] = list(prompt_token_ids)
    return body
