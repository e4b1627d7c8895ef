"""What the reflector's server tells before the first request: its models, context and tokens.

``check_server`` asks ``GET /v1/models`` once, before the MLflow run opens; ``prompt_fit`` picks
the context size and the token count the prompt is fitted with.

Design: docs/design/evolve.md#reflector_server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import openai

from crsp_ops.config import ConfigError
from crsp_ops.evolve.reflector_context import (
    CHARS_PER_TOKEN,
    Messages,
    TokenCount,
    estimate_tokens,
)
from crsp_ops.inference.server_launch import server_root
from crsp_ops.tracking.redaction import Redactor

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PromptFit:
    """How prompts are fitted: the prompt budget and the token count (both ``None``: not fitted)."""

    budget: int | None  # context tokens minus the reply budget
    count: TokenCount | None
    context_tokens: int | None
    count_source: str  # "server /tokenize", "tokenizer DIR" or "estimate"


def check_server(client: Any, model: str) -> Mapping[str, Any] | None:
    """The served model's entry in ``GET /v1/models`` (``None``: the server lists no models).

    Raises:
        ConfigError: the endpoint cannot be reached, or it serves other models only.
    """
    redact = Redactor.from_env(os.environ, extra=[str(client.api_key)]).text
    url = redact(str(client.base_url))
    try:
        listed = [entry.model_dump() for entry in client.models.list()]
    except openai.APIConnectionError as error:
        raise ConfigError(
            f"reflector: cannot reach {url} ({redact(_cause(error))}): start the server or fix "
            "reflector.base_url") from None
    except openai.APIError as error:  # the route is missing or refused: nothing to check
        logger.info("reflector: %s lists no models (%s); reflector.model=%s is not checked",
                    url, redact(_cause(error)), model)
        return None
    names = [str(entry.get("id")) for entry in listed]
    if listed and model not in names:
        raise ConfigError(f"reflector: {url} serves {names[:10]}, not reflector.model={model!r}: "
                          "set reflector.model to one of them")
    return next((entry for entry in listed if entry.get("id") == model), None)


def prompt_fit(client: Any, *, model: str, max_tokens: int, context_tokens: int,
               tokenizer: str, timeout_s: float) -> PromptFit:
    """Check the server (``check_server``) and choose the prompt budget and token count.

    Raises:
        ConfigError: see ``check_server``; or ``reflector.max_tokens`` leaves no prompt budget.
    """
    entry = check_server(client, model) or {}
    reported = entry.get("max_model_len")
    known = [n for n in (reported if isinstance(reported, int) else 0, context_tokens) if n > 0]
    if not known:
        logger.warning("reflector: the context length of %s is unknown (set "
                       "reflector.context_tokens); prompts are sent unfitted", model)
        return PromptFit(None, None, None, "none")
    context = min(known)
    if max_tokens >= context:
        raise ConfigError(f"reflector.max_tokens={max_tokens} leaves no room for the prompt in "
                          f"{model}'s context of {context} tokens: lower it")
    if isinstance(reported, int):  # vLLM: it reports max_model_len and tokenizes
        count, source = server_count(client, model, timeout_s), "server /tokenize"
    elif tokenizer:
        count, source = local_count(tokenizer), f"tokenizer {tokenizer}"
    else:
        count, source = estimate_tokens, f"estimate ({CHARS_PER_TOKEN:g} characters a token)"
    logger.info("reflector: prompts fitted to %d tokens (context %d - reply %d), counted by %s",
                context - max_tokens, context, max_tokens, source)
    return PromptFit(context - max_tokens, count, context, source)


def server_count(client: Any, model: str, timeout_s: float) -> TokenCount:
    """Count with vLLM's ``POST /tokenize`` (the chat template applied, as the server will)."""
    url = server_root(str(client.base_url)) + "/tokenize"
    headers = {"Authorization": f"Bearer {client.api_key}"}

    def count(messages: Messages) -> int:
        response = httpx.post(url, headers=headers, timeout=timeout_s, json={
            "model": model, "messages": messages, "add_generation_prompt": True})
        response.raise_for_status()
        return int(response.json()["count"])

    return count


def local_count(tokenizer_dir: str) -> TokenCount:
    """Count with a local Hugging Face tokenizer's chat template (loaded on first use)."""
    cache: dict[str, Any] = {}

    def count(messages: Messages) -> int:
        if "tok" not in cache:
            from transformers import AutoTokenizer

            cache["tok"] = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
        ids = cache["tok"].apply_chat_template(messages, add_generation_prompt=True,
                                               tokenize=True)
        return len(ids["input_ids"] if isinstance(ids, Mapping) else ids)

    return count


def _cause(error: BaseException) -> str:
    """The innermost cause of a client error, on one line."""
    while error.__cause__ is not None:
        error = error.__cause__
    return " ".join(f"{type(error).__name__}: {error}".split())[:300]
