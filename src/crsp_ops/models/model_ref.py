"""A stage output that points at an existing HF model directory instead of copying it.

``model_ref.json`` names the model directory (``model_dir``) and, optionally, a separate
tokenizer directory (``tokenizer_dir``; default: the model directory). A relative path is
relative to the directory holding ``model_ref.json``, so a reference to a model inside the
project survives copying or cloning the project.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from transformers import AutoTokenizer

from crsp_ops.atomic_io import atomic_write_json
from crsp_ops.errors import MissingInputError

MODEL_REF_FILE = "model_ref.json"


def write_model_ref(
    out_dir: Path, model_dir: Path, details: dict, *, relative: bool = False
) -> Path:
    """Record in ``out_dir`` that the base model is the directory ``model_dir``.

    Args:
        out_dir: the stage output directory (``models/base``).
        model_dir: the HF model directory it stands for.
        details: extra fields (model type, fingerprint, ...).
        relative: store ``model_dir`` relative to ``out_dir`` (models inside the project).
    """
    target = Path(model_dir).resolve()
    stored = os.path.relpath(target, Path(out_dir).resolve()) if relative else str(target)
    return atomic_write_json(Path(out_dir) / MODEL_REF_FILE, {**details, "model_dir": stored})


def read_model_ref(path: str | Path) -> dict | None:
    """The content of ``path/model_ref.json``, or ``None`` when ``path`` is the model itself."""
    ref = Path(path) / MODEL_REF_FILE
    return json.loads(ref.read_text()) if ref.is_file() else None


def resolve_model_dir(path: str | Path) -> Path:
    """The HF model directory behind ``path``: itself, or the one its model_ref.json names."""
    return _resolve(path, "model_dir")


def resolve_tokenizer_dir(path: str | Path) -> Path:
    """The tokenizer directory behind ``path``: model_ref's ``tokenizer_dir``, else the model's."""
    return _resolve(path, "tokenizer_dir")


def require_model(path: str | Path) -> Path:
    """The HF model directory behind ``path``, after checking it holds a ``config.json``.

    Raises:
        MissingInputError: ``path`` (or the directory its model_ref.json names) is not a model,
            in one line naming the fix.
    """
    path = Path(path)
    if not path.exists():
        raise MissingInputError(f"model {path} does not exist: pass --model a Hugging Face model "
                                "directory, or run the base-model stage (crsp-ops base-model)")
    model_dir = resolve_model_dir(path)
    if not (model_dir / "config.json").is_file():
        named = f" (named by {path / MODEL_REF_FILE})" if model_dir != path else ""
        raise MissingInputError(f"model {model_dir}{named} has no config.json: pass --model a "
                                "Hugging Face model directory, or re-run crsp-ops base-model")
    return model_dir


def load_tokenizer(path: str | Path):
    """The tokenizer of the model behind ``path`` (wherever ``model_ref.json`` points), offline."""
    return AutoTokenizer.from_pretrained(resolve_tokenizer_dir(path), local_files_only=True)


def _resolve(path: str | Path, key: str) -> Path:
    path = Path(path)
    ref = read_model_ref(path)
    if ref is None:
        return path
    target = ref.get(key) or ref["model_dir"]
    return (path / target).resolve() if not Path(target).is_absolute() else Path(target)
