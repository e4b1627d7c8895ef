"""Clusters 0 and 1 hold exactly the ids their rules select, on two real tokenizers."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from crsp_ops.steering.clusters import decode_vocabulary
from crsp_ops.steering.token_rules import (
    eos_token_ids,
    is_numeric_symbol_text,
    numeric_symbol_ids,
    subword_prefix,
)

# An independent spelling of the documented rule, to check the implementation against.
_RULE = re.compile(r"^\s*(?:Ġ|▁)?(?:##)?[0-9+\-*/=%^().,×÷−±$€£¥₹¢]+$")


_RULE_NO_PREFIX = re.compile(r"^\s*(?:Ġ|▁)?[0-9+\-*/=%^().,×÷−±$€£¥₹¢]+$")


def _reference_numeric(texts, prefix_allowed):
    rule = _RULE if prefix_allowed else _RULE_NO_PREFIX
    return {i for i, text in enumerate(texts) if rule.fullmatch(text)}


def test_tiny_tokenizer_cluster0_is_eos_and_generation_eos(tiny_tokenizer, tiny_generation_eos):
    ids = eos_token_ids(tiny_tokenizer, tiny_generation_eos)
    expected = {tiny_tokenizer.eos_token_id, *tiny_generation_eos}
    assert ids == expected
    assert tiny_tokenizer.convert_tokens_to_ids("<|im_end|>") in ids
    for other in ("<|im_start|>", "<|pad|>", "<|begin_of_text|>"):
        assert tiny_tokenizer.convert_tokens_to_ids(other) not in ids


def test_tiny_tokenizer_cluster1_matches_rule(tiny_tokenizer, tiny_generation_eos):
    texts = decode_vocabulary(tiny_tokenizer, progress=False)
    eos = eos_token_ids(tiny_tokenizer, tiny_generation_eos)
    got = numeric_symbol_ids(texts, subword_prefix(tiny_tokenizer), excluded=eos)
    assert got == _reference_numeric(texts, prefix_allowed=False) - eos
    by_text = {text: i for i, text in enumerate(texts)}
    for member in ("0", "9", "$", "%", ",", " $", " 20"):
        assert by_text[member] in got, member
    for outsider in (" million", "USD", " answer", "<|im_end|>", " "):
        assert by_text[outsider] not in got, outsider


def test_minilm_tokenizer_rules(minilm_tokenizer):
    texts = decode_vocabulary(minilm_tokenizer, progress=False)
    assert len(texts) == len(minilm_tokenizer) == 30522
    # BERT has no eos token and no chat template: the rule selects nothing, and says so exactly.
    assert eos_token_ids(minilm_tokenizer, None) == frozenset()
    assert subword_prefix(minilm_tokenizer) == "##"
    got = numeric_symbol_ids(texts, "##", excluded=())
    assert got == _reference_numeric(texts, prefix_allowed=True)
    vocab = minilm_tokenizer.get_vocab()
    for member in ("5", "##5", "000", "$", "£", "%"):
        assert vocab[member] in got, member
    for outsider in ("[SEP]", "##s", "5th", "the", "#"):
        assert vocab[outsider] not in got, outsider


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (" 1,234.50", True), ("Ġ42", True), ("▁$", True), ("##7", True), ("(12)", True),
        ("−3×4÷2±1", True), ("€£¥₹¢", True), ("\n 7", True),
        ("", False), ("   ", False), ("12a", False), ("1 2", False), ("7\n", False), ("#7", False),
        ("five", False), ("<|im_end|>", False),
    ],
)
def test_numeric_symbol_text(text, expected):
    assert is_numeric_symbol_text(text, "##") is expected


def test_continuation_prefix_only_stripped_for_wordpiece():
    assert is_numeric_symbol_text("##7", "##")
    assert not is_numeric_symbol_text("##7", None)


class _Tok(SimpleNamespace):
    def __len__(self):
        return 100


def test_end_of_turn_specials_need_special_flag_and_template():
    tok = _Tok(
        eos_token_id=1,
        chat_template="{{ m['content'] + '<|eot_id|>' }}{{ '<|im_end|>' }}",
        added_tokens_decoder={
            10: SimpleNamespace(content="<|eot_id|>", special=True),  # in template: counts
            11: SimpleNamespace(content="<|end|>", special=True),  # not in template
            12: SimpleNamespace(content="<|im_end|>", special=False),  # not special
            13: SimpleNamespace(content="<|start_header_id|>", special=True),  # not end-of-turn
        },
    )
    assert eos_token_ids(tok, [2, 500]) == {1, 2, 10}  # 500 is outside the vocabulary


def test_named_chat_templates_are_all_scanned():
    tok = _Tok(
        eos_token_id=None,
        chat_template={"default": "x", "tool_use": "{{ '<|end|>' }}"},
        added_tokens_decoder={11: SimpleNamespace(content="<|end|>", special=True)},
    )
    assert eos_token_ids(tok, None) == {11}
