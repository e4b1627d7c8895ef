"""What a run leaves behind: the final HF model directory and the learning curve.

The final model has LoRA merged in (a plain HF directory any loader reads) and a
``train_summary.json`` beside its weights; the curve is ``learning_curve.json`` and its figure,
in the output directory and as run artifacts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from crsp_ops.atomic_io import atomic_write_json
from crsp_ops.crsp.policy.peft_setup import save_hf_model
from crsp_ops.crsp.trainer.learning_curve import CurvePoint, save_curve_figure
from crsp_ops.tracking import Tracker

CURVE_FILE = "learning_curve.json"  # held-out evaluations of the run (and .png beside it)


def save_final_model(model: Any, tokenizer: Any, out_dir: Path, *, steps: int, algorithm: str,
                     weights: dict[str, torch.Tensor] | None = None) -> Path:
    """The HF model directory (LoRA merged) with its tokenizer and ``train_summary.json``.

    ``weights``: the gathered full state dict when the model's live tensors are shards.
    """
    out_dir = Path(out_dir)
    save_hf_model(model, out_dir, merged=True, state=weights)
    tokenizer.save_pretrained(out_dir)
    summary = {"steps": steps, "algorithm": algorithm}
    (out_dir / "train_summary.json").write_text(json.dumps(summary, indent=2))
    return out_dir


def save_curve(curve: Sequence[CurvePoint], tracker: Tracker, out_dir: Path, *,
               label: str) -> Path:
    """Write ``learning_curve.json`` and its figure to ``out_dir`` and to the run."""
    rows = [point.to_row() for point in curve]
    tracker.log_dict({"points": rows}, CURVE_FILE)
    figure = save_curve_figure({label: list(curve)}, Path(out_dir) / "learning_curve.png")
    tracker.log_artifact(figure)
    return atomic_write_json(Path(out_dir) / CURVE_FILE, {"points": rows})
