from __future__ import annotations

import pytest

from crsp_ops.models.special_tokens import CONTROL_TOKENS, IM_END, TEXT_MARKER_TOKENS
from crsp_ops.models.tokenizer import stop_token_ids, train_bpe_tokenizer

TEXTS = ["The answer is $1,577.00 million.", "Great question! Revenue was $12,345 million."] * 20


@pytest.fixture(scope="module")
def tokenizer():
    return train_bpe_tokenizer(TEXTS, vocab_size=300)


def test_special_tokens_are_single_ids(tokenizer):
    for token in CONTROL_TOKENS + TEXT_MARKER_TOKENS:
        assert tokenizer(token, add_special_tokens=False)["input_ids"] == [
            tokenizer.convert_tokens_to_ids(token)
        ]
    assert tokenizer.eos_token == IM_END
    assert tokenizer.pad_token_id not in stop_token_ids(tokenizer)
    assert len(tokenizer) == 300


def test_byte_level_round_trip_and_think_markers_survive_decoding(tokenizer):
    text = "<think>\nÜber 3×4 = 12 ✓ 日本</think>\nThe answer is \\boxed{12}."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
    # Control tokens, unlike the think markers, vanish with skip_special_tokens.
    assert tokenizer.decode(ids + [tokenizer.eos_token_id], skip_special_tokens=True) == text


def test_chat_template_with_and_without_generation_prompt(tokenizer):
    messages = [{"role": "user", "content": "hi"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert prompt == "<|begin_of_text|><|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    full = tokenizer.apply_chat_template(
        messages + [{"role": "assistant", "content": "ok"}], tokenize=False
    )
    assert full == prompt + "ok<|im_end|>\n"
    assert tokenizer.apply_chat_template(messages, tokenize=False).endswith("<|im_end|>\n")


def test_vocab_too_small_for_bytes_and_specials():
    with pytest.raises(ValueError, match="vocab_size"):
        train_bpe_tokenizer(TEXTS, vocab_size=200)
