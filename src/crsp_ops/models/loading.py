"""Load a local HF causal LM and its tokenizer (never from a hub)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.models.model_ref import resolve_model_dir


def load_causal_lm(model_dir: str | os.PathLike) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a model directory or the one its ``model_ref.json`` names.

    Raises:
        FileNotFoundError: the directory holds no ``config.json`` (names the fix).
    """
    model_dir = resolve_model_dir(model_dir)
    if not (Path(model_dir) / "config.json").is_file():
        raise FileNotFoundError(f"{model_dir} is not an HF model directory (no config.json); "
                                "run `crsp-ops base-model` or pass --model")
    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    return model, tokenizer
