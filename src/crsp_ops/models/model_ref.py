"""A stage output that points at an existing HF model directory instead of copying it."""

from __future__ import annotations

import json
from pathlib import Path

from crsp_ops.atomic_io import atomic_write_json

MODEL_REF_FILE = "model_ref.json"


def write_model_ref(out_dir: Path, model_dir: Path, details: dict) -> Path:
    """Record in ``out_dir`` that the base model is the directory ``model_dir``."""
    return atomic_write_json(
        Path(out_dir) / MODEL_REF_FILE, {"model_dir": str(Path(model_dir).resolve()), **details}
    )


def resolve_model_dir(path: str | Path) -> Path:
    """The HF model directory behind ``path``: itself, or the one its model_ref.json names."""
    path = Path(path)
    ref = path / MODEL_REF_FILE
    if ref.is_file():
        return Path(json.loads(ref.read_text())["model_dir"])
    return path
