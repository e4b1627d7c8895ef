"""Greedy sanity generation from a saved model dir, and how well-formed its answers are."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

# "The answer is <something with a digit>." possibly hedged ("the answer is ...").
ANSWER_SENTENCE = re.compile(r"\b[Tt]he answer is ([^\s].*?\d.*?)\.(?:\s|$)")


@dataclass(frozen=True)
class Reply:
    """One greedy reply."""

    text: str  # decoded, special tokens stripped
    num_tokens: int  # response tokens, including the end-of-turn token if produced
    ended_with_end_of_turn: bool


@dataclass(frozen=True)
class AnswerStats:
    """Format and correctness of a set of replies."""

    num_replies: int
    well_formed: float  # fraction ending with end-of-turn and holding one answer sentence
    correct: float  # fraction whose answer sentence states the gold answer exactly
    mean_tokens: float


def extract_stated_answer(text: str) -> str | None:
    """The answer of the first "The answer is X." sentence, if any.

    >>> extract_stated_answer("Great question! The answer is $1,577.00 million. Bye.")
    '$1,577.00 million'
    >>> extract_stated_answer("No idea.") is None
    True
    """
    match = ANSWER_SENTENCE.search(text)
    return match.group(1) if match else None


def answer_stats(replies: Sequence[Reply], gold_answers: Sequence[str]) -> AnswerStats:
    """Score replies against gold answers (exact string match of the stated answer)."""
    if len(replies) != len(gold_answers) or not replies:
        raise ValueError(
            f"need as many replies as answers (> 0): {len(replies)}, {len(gold_answers)}"
        )
    well_formed = correct = 0
    for reply, gold in zip(replies, gold_answers, strict=True):
        stated = extract_stated_answer(reply.text)
        well_formed += bool(reply.ended_with_end_of_turn and stated is not None)
        correct += stated == gold
    n = len(replies)
    return AnswerStats(
        num_replies=n,
        well_formed=well_formed / n,
        correct=correct / n,
        mean_tokens=sum(r.num_tokens for r in replies) / n,
    )


def greedy_replies(
    model_dir: str | Path, user_messages: Sequence[str], *, max_new_tokens: int
) -> list[Reply]:
    """Greedy-decode one reply per user message with the directory's own chat template.

    Stops at any eos id of ``generation_config.json`` (``<|im_end|>`` for the tiny model).
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True).eval()
    eos_ids = model.generation_config.eos_token_id
    stop_ids = set([eos_ids] if isinstance(eos_ids, int) else eos_ids)
    replies = []
    for message in user_messages:
        inputs = tokenizer.apply_chat_template(
            [{"role": "user", "content": message}],
            add_generation_prompt=True,
            return_tensors="pt",
            return_dict=True,
        )
        with torch.no_grad():
            output = model.generate(**inputs, max_new_tokens=max_new_tokens, do_sample=False)
        response = output[0, inputs["input_ids"].shape[1] :].tolist()  # (T_response,)
        replies.append(
            Reply(
                text=tokenizer.decode(response, skip_special_tokens=True),
                num_tokens=len(response),
                ended_with_end_of_turn=bool(response) and response[-1] in stop_ids,
            )
        )
    return replies
