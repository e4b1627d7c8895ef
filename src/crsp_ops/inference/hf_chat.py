"""Chat-template tokenization, shared by the InferenceContext and the HF backend.

Both must produce the same prompt ids (those the rollout is trained on), so both call
:func:`encode_chat`; a final assistant message is continued, not answered (the prefill).

Design: docs/design/inference.md#hf_chat.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jinja2
import jinja2.ext
import jinja2.meta

from crsp_ops.config.errors import ConfigError

Prompt = str | Sequence[Mapping[str, str]]
"""A user prompt string, or a chat message list (multi-turn allowed)."""

FALLBACK_GENERATION_PROMPT = "assistant:"


def assistant_prefill(messages: Sequence[Mapping[str, str]]) -> str:
    """The content the response continues: the last message's when it is the assistant's, else "".

    >>> assistant_prefill([{"role": "user", "content": "hi"}, {"role": "assistant",
    ...                    "content": "<think>"}])
    '<think>'
    >>> assistant_prefill([{"role": "user", "content": "hi"}])
    ''
    """
    if messages and messages[-1].get("role") == "assistant":
        return str(messages[-1].get("content", ""))
    return ""


def prefill_request_fields(messages: Sequence[Mapping[str, str]]) -> dict[str, bool]:
    """Chat-completions fields (vLLM, SGLang) that make a server continue a final assistant turn.

    >>> prefill_request_fields([{"role": "user", "content": "q"},
    ...                         {"role": "assistant", "content": "<think>"}])
    {'continue_final_message': True, 'add_generation_prompt': False}
    >>> prefill_request_fields([{"role": "user", "content": "q"}])
    {}
    """
    if messages and messages[-1].get("role") == "assistant":
        return {"continue_final_message": True, "add_generation_prompt": False}
    return {}

def as_messages(prompt: Prompt) -> list[dict[str, str]]:
    """Turn a prompt string or message list into a validated message list.

    Raises:
        ValueError: nothing to tokenize (empty string, empty list, all contents blank), naming
            the prompt; or a message without string ``role``/``content``.
    """
    if isinstance(prompt, str):
        messages = [{"role": "user", "content": prompt}]
    else:
        messages = [dict(message) for message in prompt]
    for position, message in enumerate(messages):
        if not isinstance(message.get("role"), str) or not isinstance(message.get("content"), str):
            raise ValueError(
                f"message {position} of prompt {_preview(prompt)} needs string 'role' and "
                f"'content' fields, got {message!r}"
            )
    if not any(message["content"].strip() for message in messages):
        raise ValueError(f"nothing to tokenize: prompt {_preview(prompt)} is empty")
    return messages


def has_chat_template(tokenizer: Any) -> bool:
    """True when the tokenizer carries a chat template."""
    return bool(getattr(tokenizer, "chat_template", None))


def fallback_prompt_text(messages: Sequence[Mapping[str, str]]) -> str:
    """The documented no-template format: ``role: content`` lines, then ``assistant:``.

    A final assistant message is the generation prompt itself (``assistant: <prefill>``).
    """
    lines = [f"{message['role']}: {message['content']}" for message in messages]
    if prefill_request_fields(messages):
        return "\n".join(lines)
    return "\n".join([*lines, FALLBACK_GENERATION_PROMPT])


def template_variables(tokenizer: Any) -> frozenset[str] | None:
    """The variables the tokenizer's chat template reads, or ``None`` when that is unknown.

    Unknown: no template, a dict of named templates, or a template plain Jinja cannot parse
    (an HF-only tag such as ``{% generation %}``).
    """
    template = getattr(tokenizer, "chat_template", None)
    if not isinstance(template, str):
        return None
    try:
        parsed = jinja2.Environment(extensions=[jinja2.ext.loopcontrols]).parse(template)
    except jinja2.TemplateSyntaxError:
        return None
    return frozenset(jinja2.meta.find_undeclared_variables(parsed))


def check_template_kwargs(tokenizer: Any, kwargs: Mapping[str, Any]) -> None:
    """Raise unless every key of ``kwargs`` is a variable the chat template reads.

    Raises:
        ValueError: ``kwargs`` for a tokenizer without a chat template, or a key the template
            never reads (Jinja would ignore it silently), naming the key.
    """
    if not kwargs:
        return
    if not has_chat_template(tokenizer):
        raise _no_template(kwargs)
    variables = template_variables(tokenizer)
    unread = sorted(set(kwargs) - variables) if variables is not None else []
    if unread:
        raise ValueError(f"the model's chat template does not read {unread} (it would be "
                         "ignored): drop it, or use a model whose template reads it")


def checked_template_kwargs(tokenizer: Any | None,
                            kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """``generation.chat_template_kwargs`` (parsed), checked against ``tokenizer``'s template.

    Unchecked when there is no local tokenizer (a served model only).

    Raises:
        ConfigError: one line naming the option: a key the template does not read, or no
            template at all.
    """
    if tokenizer is not None:
        try:
            check_template_kwargs(tokenizer, kwargs)
        except ValueError as error:
            raise ConfigError(f"generation.chat_template_kwargs: {error}") from None
    return dict(kwargs)


def chat_template_ids(tokenizer: Any, messages: Sequence[Mapping[str, str]],
                      template_kwargs: Mapping[str, Any] | None = None) -> list[int]:
    """Token ids of ``messages`` through the chat template, with the generation prompt.

    A final assistant message is continued instead (design: docs/design/inference.md#hf_chat).
    ``template_kwargs`` are extra template variables. transformers v5 returns a
    ``BatchEncoding`` from ``apply_chat_template(tokenize=True)``; v4 returns a bare list.
    Both are accepted.
    """
    prefill = bool(prefill_request_fields(messages))
    encoded = tokenizer.apply_chat_template(
        list(messages), tokenize=True, add_generation_prompt=not prefill,
        continue_final_message=prefill, **(template_kwargs or {}),
    )
    if isinstance(encoded, Mapping) or hasattr(encoded, "input_ids"):
        encoded = encoded["input_ids"]
    if hasattr(encoded, "tolist"):
        encoded = encoded.tolist()
    if encoded and isinstance(encoded[0], list):  # a batch of one conversation
        if len(encoded) != 1:
            raise ValueError(f"chat template returned {len(encoded)} sequences for one prompt")
        encoded = encoded[0]
    return [int(token_id) for token_id in encoded]


def encode_chat(tokenizer: Any, prompt: Prompt,
                template_kwargs: Mapping[str, Any] | None = None) -> tuple[list[int], bool]:
    """Prompt ids exactly as an engine feeds them to the model.

    Args:
        tokenizer: the model's tokenizer.
        prompt: a user prompt string or a message list.
        template_kwargs: extra chat-template variables (the engine's ``chat_template_kwargs``).

    Returns:
        ``(ids, used_fallback)``; ``used_fallback`` is True when the tokenizer has no chat
        template and the ``role: content`` format was used instead.

    Raises:
        ValueError: the prompt is empty or tokenizes to nothing, or ``template_kwargs`` are
            given for a tokenizer without a chat template (nothing would read them).
    """
    messages = as_messages(prompt)
    if has_chat_template(tokenizer):
        ids, used_fallback = chat_template_ids(tokenizer, messages, template_kwargs), False
    elif template_kwargs:
        raise _no_template(template_kwargs)
    else:
        ids = list(tokenizer.encode(fallback_prompt_text(messages), add_special_tokens=True))
        used_fallback = True
    if not ids:
        raise ValueError(f"prompt {_preview(prompt)} tokenized to zero tokens")
    return ids, used_fallback


def _no_template(kwargs: Mapping[str, Any]) -> ValueError:
    return ValueError(f"chat template kwargs {sorted(kwargs)} given, but the tokenizer has no "
                      "chat template to pass them to")


def _preview(prompt: Prompt, limit: int = 100) -> str:
    text = repr(prompt)
    return text if len(text) <= limit else text[:limit] + "..."
