"""Benchmark models that mean what their names say: the tiny model, or a real-size shape.

``tiny`` loads a saved HF directory (default ``models/base``). ``smollm2-shape`` and
``qwen2-0.5b-shape`` build a randomly initialised Llama of that architecture from its config
(no download) with a tokenizer whose vocabulary is exactly the model's: the given tokenizer
(default ``models/base``; a real SmolLM2 tokenizer from ``models/converted`` fits the SmolLM2
shape as is) padded with decode-only entries up to the model's vocabulary, so every id the
random model samples decodes and the full-vocabulary softmax cost is real.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

SHAPES = {
    # SmolLM2-135M: 134.5M parameters, tied embeddings
    "smollm2-shape": dict(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                          num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                          tie_word_embeddings=True),
    # Qwen2-0.5B's sizes on a Llama block (no QKV bias): ~494M parameters, tied embeddings
    "qwen2-0.5b-shape": dict(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                             num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                             tie_word_embeddings=True),
    # Qwen2.5-1.5B's and -3B's sizes on a Llama block (the GPU memory table, docs/scaling.md)
    "qwen2.5-1.5b-shape": dict(vocab_size=151936, hidden_size=1536, intermediate_size=8960,
                               num_hidden_layers=28, num_attention_heads=12,
                               num_key_value_heads=2, tie_word_embeddings=True),
    "qwen2.5-3b-shape": dict(vocab_size=151936, hidden_size=2048, intermediate_size=11008,
                             num_hidden_layers=36, num_attention_heads=16, num_key_value_heads=2,
                             tie_word_embeddings=True),
}


def padded_tokenizer_dir(source: Path, vocab_size: int, out_dir: Path) -> Path:
    """Copy the tokenizer files of ``source`` to ``out_dir`` with ``vocab_size`` entries.

    The extra entries are plain vocabulary strings without merges: they decode, the encoder
    never produces them.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                 "chat_template.jinja", "generation_config.json"):
        if (source / name).is_file():
            shutil.copy(source / name, out_dir / name)
    spec = json.loads((source / "tokenizer.json").read_text())
    vocab = spec["model"]["vocab"]
    taken = set(vocab.values()) | {t["id"] for t in spec.get("added_tokens", [])}
    next_id, serial = 0, 0
    while len(taken) < vocab_size:
        if next_id not in taken:
            while f"x{serial}" in vocab:
                serial += 1
            vocab[f"x{serial}"] = next_id
            taken.add(next_id)
            serial += 1
        next_id += 1
    (out_dir / "tokenizer.json").write_text(json.dumps(spec))
    return out_dir


def load_model(name: str, tokenizer_dir: Path, scratch: Path, *, seed: int = 0):
    """``(model, tokenizer)`` for ``tiny`` (a saved dir) or one of ``SHAPES``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    if name not in SHAPES:
        path = Path(tokenizer_dir if name == "tiny" else name)
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        return AutoModelForCausalLM.from_pretrained(path, local_files_only=True), tokenizer
    shape = SHAPES[name]
    source = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    if len(source) != shape["vocab_size"]:
        tokenizer_dir = padded_tokenizer_dir(Path(tokenizer_dir), shape["vocab_size"],
                                             scratch / "tokenizer")
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir, local_files_only=True)
    if len(tokenizer) != shape["vocab_size"]:
        raise ValueError(f"tokenizer has {len(tokenizer)} ids, the shape {shape['vocab_size']}")
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    eos = eos if isinstance(eos, int) and eos >= 0 else tokenizer.eos_token_id
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    config = LlamaConfig(**shape, max_position_embeddings=8192, rope_theta=100000.0,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=eos, pad_token_id=pad)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = eos
    model.generation_config.pad_token_id = pad
    return model, tokenizer
