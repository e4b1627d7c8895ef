"""Evolution tokenizes with the tokenizer model_ref.json points at, never the stage dir's guess."""

from __future__ import annotations

import json

from crsp_ops.evolve.session import _lazy_tokenizer
from crsp_ops.models.model_ref import MODEL_REF_FILE, load_tokenizer
from crsp_ops.models.tokenizer import train_bpe_tokenizer

TEXT = "The operating margin rose to 12.5% from 11.0%."


def test_lazy_tokenizer_follows_model_ref(tmp_path):
    model_tok = train_bpe_tokenizer(["revenue margin " * 50], vocab_size=280)
    ref_tok = train_bpe_tokenizer([TEXT * 50], vocab_size=320)
    model_tok.save_pretrained(tmp_path / "model")
    ref_tok.save_pretrained(tmp_path / "tokenizer")
    base = tmp_path / "models" / "base"
    base.mkdir(parents=True)
    (base / MODEL_REF_FILE).write_text(json.dumps(
        {"model_dir": "../../model", "tokenizer_dir": str(tmp_path / "tokenizer")}))
    expected = ref_tok(TEXT, add_special_tokens=False)["input_ids"]
    assert expected != model_tok(TEXT, add_special_tokens=False)["input_ids"]

    assert _lazy_tokenizer(base)(TEXT) == expected
    assert load_tokenizer(base)(TEXT, add_special_tokens=False)["input_ids"] == expected
    # without tokenizer_dir, the tokenizer is the referenced model's (not models/base itself)
    (base / MODEL_REF_FILE).write_text(json.dumps({"model_dir": "../../model"}))
    assert _lazy_tokenizer(base)(TEXT) == model_tok(TEXT, add_special_tokens=False)["input_ids"]


def test_backend_loads_the_tokenizer_model_ref_names(tiny_model_dir, tmp_path):
    from crsp_ops.config import load_settings
    from crsp_ops.inference.open_backend import open_backend
    from crsp_ops.paths import copy_config_tree
    from tests.evolve.evolve_testkit import REPO

    other = train_bpe_tokenizer([TEXT * 50], vocab_size=320)
    other.save_pretrained(tmp_path / "tokenizer")
    base = tmp_path / "base"
    base.mkdir()
    (base / MODEL_REF_FILE).write_text(json.dumps(
        {"model_dir": str(tiny_model_dir), "tokenizer_dir": "../tokenizer"}))
    root = tmp_path / "p"
    root.mkdir()
    copy_config_tree(REPO, root)
    settings = load_settings(root, ["model.device=cpu"]).settings
    with open_backend(settings, base, None) as backend:
        assert backend.tokenizer(TEXT, add_special_tokens=False)["input_ids"] == \
            other(TEXT, add_special_tokens=False)["input_ids"]
