"""Load a local HF causal LM and its tokenizer (never from a hub)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM

from crsp_ops.models.model_ref import load_tokenizer, resolve_model_dir


def load_causal_lm(model_dir: str | os.PathLike,
                   dtype: torch.dtype | None = None) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from a model directory or where its ``model_ref.json`` points.

    ``dtype``: the weights' dtype (the training drivers pick it from ``model.dtype``); ``None``
    keeps what the checkpoint holds.

    Raises:
        FileNotFoundError: the directory holds no ``config.json`` (names the fix).
    """
    weights_dir = resolve_model_dir(model_dir)
    if not (Path(weights_dir) / "config.json").is_file():
        raise FileNotFoundError(f"{weights_dir} is not an HF model directory (no config.json); "
                                "run `crsp-ops base-model` or pass --model")
    tokenizer = load_tokenizer(model_dir)  # where model_ref.json points
    dtype_kwargs = {} if dtype is None else {"dtype": dtype}
    model = AutoModelForCausalLM.from_pretrained(weights_dir, local_files_only=True,
                                                 **dtype_kwargs)
    return model, tokenizer
