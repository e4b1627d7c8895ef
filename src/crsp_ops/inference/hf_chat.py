"""Chat-template tokenization, shared by the InferenceContext and the HF backend.

Both must produce the *same* prompt ids (the ids the model is fed are the ids a rollout is
trained on), so both call :func:`encode_chat` and nothing else.

Fallback when the tokenizer has no chat template: each message becomes one ``"{role}:
{content}"`` line, followed by an ``"assistant:"`` line as the generation prompt, encoded with
the tokenizer's own special tokens (e.g. BOS). Only a *missing* template falls back; a template
that raises is an error, since silently changing the prompt format would corrupt rollouts.

Assistant prefill: a conversation whose *last* message is an ``assistant`` message is
continued, not answered: the template renders that message open-ended
(``continue_final_message=True``, no generation prompt), so the model's response starts right
after its content (e.g. ``<think>``). This is what vLLM and SGLang do when a request carries
``continue_final_message=true`` (``prefill_request_fields``), so every backend feeds the model
the same ids. The response text does not repeat the prefill: :func:`assistant_prefill` gives
it back to callers that parse the whole turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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


def chat_template_ids(tokenizer: Any, messages: Sequence[Mapping[str, str]]) -> list[int]:
    """Token ids of ``messages`` through the chat template, with the generation prompt.

    A final assistant message is continued instead (see the module docstring).
    transformers v5 returns a ``BatchEncoding`` from ``apply_chat_template(tokenize=True)``;
    v4 returns a bare list. Both are accepted.
    """
    prefill = bool(prefill_request_fields(messages))
    encoded = tokenizer.apply_chat_template(
        list(messages), tokenize=True, add_generation_prompt=not prefill,
        continue_final_message=prefill,
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


def encode_chat(tokenizer: Any, prompt: Prompt) -> tuple[list[int], bool]:
    """Prompt ids exactly as an engine feeds them to the model.

    Returns:
        ``(ids, used_fallback)``; ``used_fallback`` is True when the tokenizer has no chat
        template and the ``role: content`` format was used instead.

    Raises:
        ValueError: the prompt is empty or tokenizes to nothing.
    """
    messages = as_messages(prompt)
    if has_chat_template(tokenizer):
        ids, used_fallback = chat_template_ids(tokenizer, messages), False
    else:
        ids = list(tokenizer.encode(fallback_prompt_text(messages), add_special_tokens=True))
        used_fallback = True
    if not ids:
        raise ValueError(f"prompt {_preview(prompt)} tokenized to zero tokens")
    return ids, used_fallback


def _preview(prompt: Prompt, limit: int = 100) -> str:
    text = repr(prompt)
    return text if len(text) <= limit else text[:limit] + "..."
