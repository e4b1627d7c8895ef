from __future__ import annotations

import json
import shutil

import pytest

from crsp_ops.models.answer_check import (
    Reply,
    answer_stats,
    extract_stated_answer,
    greedy_replies,
)
from crsp_ops.models.hf_model_dir import ModelDirError, validate_hf_model_dir


def test_valid_dir_reports_vocab_and_end_of_turn_ids(tiny_model_dir):
    from transformers import AutoTokenizer

    info = validate_hf_model_dir(tiny_model_dir)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    assert info.model_type == "llama"
    assert info.vocab_size == len(tokenizer)
    assert tokenizer.convert_tokens_to_ids("<|im_end|>") == info.eos_token_ids[0]
    assert tokenizer.convert_tokens_to_ids("<|endoftext|>") in info.eos_token_ids
    assert info.pad_token_id == tokenizer.pad_token_id
    assert "<|im_start|>" in info.chat_template


@pytest.fixture
def model_copy(tiny_model_dir, tmp_path):
    return shutil.copytree(tiny_model_dir, tmp_path / "model")


def test_missing_directory(tmp_path):
    with pytest.raises(ModelDirError, match="not found"):
        validate_hf_model_dir(tmp_path / "absent")


def test_missing_config(model_copy):
    (model_copy / "config.json").unlink()
    with pytest.raises(ModelDirError, match="missing config.json"):
        validate_hf_model_dir(model_copy)


def test_missing_weights(model_copy):
    (model_copy / "model.safetensors").unlink()
    with pytest.raises(ModelDirError, match="no weights"):
        validate_hf_model_dir(model_copy)


def test_missing_tokenizer(model_copy):
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (model_copy / name).unlink()
    with pytest.raises(ModelDirError, match="missing tokenizer"):
        validate_hf_model_dir(model_copy)


def test_missing_chat_template(model_copy):
    template_file = model_copy / "chat_template.jinja"
    if template_file.exists():
        template_file.unlink()
    config_file = model_copy / "tokenizer_config.json"
    config = json.loads(config_file.read_text())
    config.pop("chat_template", None)
    config_file.write_text(json.dumps(config))
    with pytest.raises(ModelDirError, match="no chat template"):
        validate_hf_model_dir(model_copy)


def test_extract_and_score_answers():
    assert extract_stated_answer("Sure. The answer is -$26.00 million. Bye.") == "-$26.00 million"
    assert extract_stated_answer("As far as I can tell, the answer is 4.4%.") == "4.4%"
    assert extract_stated_answer("The answer is unclear.") is None
    replies = [
        Reply("The answer is 4.4%.", 8, True),
        Reply("The answer is 5.0%.", 8, True),
        Reply("The answer is 4.4%. I hope this", 48, False),  # cut off: not well-formed
        Reply("Thanks for asking.", 4, True),
    ]
    stats = answer_stats(replies, ["4.4%", "4.4%", "4.4%", "4.4%"])
    assert stats.well_formed == 0.5
    assert stats.correct == 0.5  # the cut-off reply still states the right number
    assert stats.mean_tokens == 17.0
    with pytest.raises(ValueError):
        answer_stats(replies, ["4.4%"])


def test_greedy_replies_from_saved_dir_end_with_end_of_turn(tiny_model_dir, tiny_prompt_template):
    from crsp_ops.data.financebench import load_financebench, render_question_prompt

    examples = load_financebench("synthetic", synthetic_count=4, seed=11).rows
    messages = [render_question_prompt(e, template=tiny_prompt_template) for e in examples]
    replies = greedy_replies(tiny_model_dir, messages, max_new_tokens=48)
    assert len(replies) == 4
    assert sum(r.ended_with_end_of_turn for r in replies) >= 3
    stats = answer_stats(replies, [e.answer for e in examples])
    assert stats.well_formed >= 0.5
