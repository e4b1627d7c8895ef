from __future__ import annotations

import json
import shutil

import pytest

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
