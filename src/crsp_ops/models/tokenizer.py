"""Train the tiny model's byte-level BPE tokenizer and wrap it as a transformers tokenizer."""

from __future__ import annotations

from collections.abc import Iterable

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

from crsp_ops.models.special_tokens import (
    BOS_TOKEN,
    CHAT_TEMPLATE,
    CONTROL_TOKENS,
    EOS_TOKEN,
    IM_END,
    IM_START,
    PAD_TOKEN,
    TEXT_MARKER_TOKENS,
)


def train_bpe_tokenizer(texts: Iterable[str], *, vocab_size: int) -> PreTrainedTokenizerFast:
    """Train a byte-level BPE on ``texts`` and return it with special tokens and chat template.

    Byte-level means every string is encodable (no unknown token). ``eos_token`` is the
    end-of-turn token ``<|im_end|>`` and ``pad_token`` a dedicated ``<|pad|>``; no token is added
    automatically on encode: the chat template writes the BOS itself.

    Args:
        texts: training text (message contents; special tokens are not needed in it).
        vocab_size: target vocabulary size including the 256 byte symbols and special tokens.
    """
    minimum = 256 + len(CONTROL_TOKENS) + len(TEXT_MARKER_TOKENS)
    if vocab_size < minimum:
        raise ValueError(
            f"vocab_size must be >= {minimum} (bytes + special tokens), got {vocab_size}"
        )
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size - len(TEXT_MARKER_TOKENS),
        special_tokens=list(CONTROL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    backend.train_from_iterator(texts, trainer=trainer)
    backend.add_tokens([AddedToken(t, special=False, normalized=False) for t in TEXT_MARKER_TOKENS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS_TOKEN,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        additional_special_tokens=[EOS_TOKEN, IM_START],
        padding_side="left",  # decoder-only generation pads on the left
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def stop_token_ids(tokenizer: PreTrainedTokenizerFast) -> list[int]:
    """Ids that end generation: end of turn first, then end of document."""
    return [tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(EOS_TOKEN)]
