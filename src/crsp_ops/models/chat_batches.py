"""Tokenise chat samples for causal-LM training with loss on assistant tokens only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from transformers import PreTrainedTokenizerBase

from crsp_ops.models.chat_corpus import ChatSample

IGNORE_INDEX = -100  # label value torch's cross-entropy skips


@dataclass(frozen=True)
class TokenizedSample:
    """One conversation as ids, with the label mask applied."""

    input_ids: tuple[int, ...]
    labels: tuple[int, ...]  # IGNORE_INDEX on prompt tokens, ids on the reply + end of turn


def tokenize_sample(sample: ChatSample, tokenizer: PreTrainedTokenizerBase) -> TokenizedSample:
    """Tokenise prompt and reply separately, exactly as generation will see them.

    The prompt is every message but the last (earlier turns of ``sample.context`` included)
    rendered with ``add_generation_prompt=True`` — the same string a backend feeds at inference
    — and the reply is the rest of the rendered conversation up to and including
    ``<|im_end|>``. Tokenising them separately guarantees the training prompt ids are
    the inference prompt ids, whatever BPE would merge across the boundary.
    """
    messages = sample.messages()
    prompt = tokenizer.apply_chat_template(messages[:-1], add_generation_prompt=True,
                                           tokenize=False)
    full = tokenizer.apply_chat_template(messages, tokenize=False)
    if not full.startswith(prompt):
        raise ValueError("chat template does not render the prompt as a prefix of the conversation")
    end_of_turn = tokenizer.eos_token
    reply = full[len(prompt) :]
    reply = reply[: reply.index(end_of_turn) + len(end_of_turn)]  # drop the trailing newline
    prompt_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    reply_ids = tokenizer(reply, add_special_tokens=False)["input_ids"]
    return TokenizedSample(
        input_ids=tuple(prompt_ids + reply_ids),
        labels=tuple([IGNORE_INDEX] * len(prompt_ids) + reply_ids),
    )


def collate(samples: Sequence[TokenizedSample], pad_id: int) -> dict[str, torch.Tensor]:
    """Right-pad a batch (training needs no left padding) into input_ids, attention_mask, labels."""
    width = max(len(s.input_ids) for s in samples)
    input_ids = torch.full((len(samples), width), pad_id, dtype=torch.long)  # (B, T)
    labels = torch.full((len(samples), width), IGNORE_INDEX, dtype=torch.long)  # (B, T)
    attention_mask = torch.zeros((len(samples), width), dtype=torch.long)  # (B, T)
    for row, sample in enumerate(samples):
        n = len(sample.input_ids)
        input_ids[row, :n] = torch.tensor(sample.input_ids)
        labels[row, :n] = torch.tensor(sample.labels)
        attention_mask[row, :n] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}
