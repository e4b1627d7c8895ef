"""The two rule-based clusters: 0 = EOS/EOT ids, 1 = digits and arithmetic/currency symbols.

Both rules are exact (no embedding involved), so a cluster's membership can be checked against
the tokenizer alone. Everything here is pure given a tokenizer object.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

EOS_CLUSTER = 0
NUMERIC_CLUSTER = 1
FIRST_KMEANS_CLUSTER = 2

END_OF_TURN_TOKENS = frozenset(
    {
        "<|im_end|>",  # ChatML (Qwen, many fine-tunes)
        "<|eot_id|>",  # Llama 3
        "<|eom_id|>",  # Llama 3 tool turns
        "<|end|>",  # Phi-3
        "<end_of_turn>",  # Gemma
        "<|end_of_turn|>",  # OpenChat
        "<|endofturn|>",
        "<|return|>",  # gpt-oss harmony
    }
)
"""Spellings of end-of-turn specials; one counts only if the tokenizer registers it as a special
token *and* the chat template emits it."""

DIGITS = "0123456789"
ARITHMETIC_SYMBOLS = "+-*/=%^().,×÷−±"
CURRENCY_SYMBOLS = "$€£¥₹¢"
NUMERIC_SYMBOL_CHARS = frozenset(DIGITS + ARITHMETIC_SYMBOLS + CURRENCY_SYMBOLS)
"""Characters a cluster-1 token may consist of.

ASCII digits ``0-9``; arithmetic ``+ - * / = % ^ ( ) . ,`` (the comma and period also serve as
thousands and decimal separators, parentheses as accounting negatives) plus ``× ÷ − ±`` (U+00D7,
U+00F7, U+2212, U+00B1); currency ``$ € £ ¥ ₹ ¢``.
"""

BPE_SPACE_MARKERS = ("Ġ", "▁")  # byte-level BPE and SentencePiece word-start markers


def eos_token_ids(tokenizer: Any, generation_eos_ids: Iterable[int] | int | None) -> frozenset[int]:
    """Return the EOS/EOT ids of a model: the exact membership of cluster 0.

    Args:
        tokenizer: a Hugging Face tokenizer.
        generation_eos_ids: ``generation_config.eos_token_id`` of the model (an int, a list of
            ints, or ``None``).

    Returns:
        The tokenizer's ``eos_token_id``, the generation-config eos ids, and every end-of-turn
        special (``END_OF_TURN_TOKENS``) that is a registered special token and appears in the
        chat template; ids outside the tokenizer's vocabulary are dropped.
    """
    vocab_size = len(tokenizer)
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    if isinstance(generation_eos_ids, int):
        ids.add(generation_eos_ids)
    elif generation_eos_ids is not None:
        ids.update(int(i) for i in generation_eos_ids)
    template = _chat_template_text(tokenizer)
    for token_id, added in _special_added_tokens(tokenizer):
        if added in END_OF_TURN_TOKENS and added in template:
            ids.add(token_id)
    return frozenset(i for i in ids if 0 <= i < vocab_size)


def _chat_template_text(tokenizer: Any) -> str:
    template = getattr(tokenizer, "chat_template", None)
    if isinstance(template, dict):  # named templates: any of them may end a turn
        return "\n".join(str(t) for t in template.values())
    return template or ""


def _special_added_tokens(tokenizer: Any) -> list[tuple[int, str]]:
    return [
        (int(token_id), added.content)
        for token_id, added in tokenizer.added_tokens_decoder.items()
        if added.special
    ]


def subword_prefix(tokenizer: Any) -> str | None:
    """Return the tokenizer's continuation marker (``"##"`` for WordPiece), if it has one."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    model = getattr(backend, "model", None)
    return getattr(model, "continuing_subword_prefix", None) or None


def is_numeric_symbol_text(text: str, continuation_prefix: str | None) -> bool:
    """Say whether a decoded token belongs to cluster 1.

    Leading whitespace, one BPE word-start marker (``Ġ``, ``▁``) and the tokenizer's
    continuation prefix (``##``) are ignored; what remains must be non-empty and made only of
    ``NUMERIC_SYMBOL_CHARS``.

    >>> is_numeric_symbol_text(" 1,234", None), is_numeric_symbol_text("##5", "##")
    (True, True)
    >>> is_numeric_symbol_text(" 12a", None), is_numeric_symbol_text("  ", None)
    (False, False)
    """
    core = text.lstrip()
    for marker in BPE_SPACE_MARKERS:
        if core.startswith(marker):
            core = core[len(marker) :]
            break
    if continuation_prefix and core.startswith(continuation_prefix):
        core = core[len(continuation_prefix) :]
    return bool(core) and all(char in NUMERIC_SYMBOL_CHARS for char in core)


def numeric_symbol_ids(
    texts: Sequence[str], continuation_prefix: str | None, excluded: Iterable[int]
) -> frozenset[int]:
    """Return the ids whose decoded text passes ``is_numeric_symbol_text`` (cluster 1).

    Args:
        texts: decoded text of every vocab id (index = id).
        continuation_prefix: see ``subword_prefix``.
        excluded: ids already claimed by cluster 0 (EOS wins over a numeric spelling).
    """
    skip = set(excluded)
    return frozenset(
        token_id
        for token_id, text in enumerate(texts)
        if token_id not in skip and is_numeric_symbol_text(text, continuation_prefix)
    )
