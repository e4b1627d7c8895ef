"""Checkpoints of a self-play run: HF model dir + ``trainer_state.pt``, newest N kept.

With LoRA the HF directory holds the frozen base weights and ``adapter/`` the PEFT adapter
(``peft_setup``); ``--resume`` loads the first as the model and restores the second.

A checkpoint is written into a temporary folder and renamed into place, so a crash mid-save
never leaves a half checkpoint that ``latest_checkpoint`` would pick. ``trainer_state.pt``
holds only tensors and plain Python values (loaded with ``weights_only=True``): optimizer
state, step, task buffers, and the Python and torch RNG states.
"""

from __future__ import annotations

import os
import random
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

CHECKPOINTS = "checkpoints"
STATE_FILE = "trainer_state.pt"


def checkpoint_path(out_dir: Path, step: int) -> Path:
    """``<out_dir>/checkpoints/step-000010``."""
    return Path(out_dir) / CHECKPOINTS / f"step-{step:06d}"


def list_checkpoints(out_dir: Path) -> list[Path]:
    """Complete checkpoints, oldest first."""
    root = Path(out_dir) / CHECKPOINTS
    found = [p for p in root.glob("step-*") if (p / STATE_FILE).is_file()]
    return sorted(found, key=lambda p: int(p.name.split("-")[1]))


def latest_checkpoint(out_dir: Path) -> Path | None:
    """The newest complete checkpoint, or ``None``."""
    found = list_checkpoints(out_dir)
    return found[-1] if found else None


def rng_state(rng: random.Random) -> dict[str, Any]:
    """RNG states to restore on resume (the trainer's ``random.Random`` and torch's)."""
    version, internal, gauss = rng.getstate()
    state = {"python": [version, list(internal), gauss], "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def restore_rng(state: Mapping[str, Any], rng: random.Random) -> None:
    """Inverse of ``rng_state``."""
    version, internal, gauss = state["python"]
    rng.setstate((version, tuple(internal), gauss))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(out_dir: Path, step: int, model: Any, tokenizer: Any,
                    state: Mapping[str, Any], *, keep: int,
                    save_model: Callable[[Path], Any] | None = None) -> Path:
    """Write the checkpoint of ``step`` and delete all but the newest ``keep``.

    Args:
        out_dir: the run's output directory.
        step: completed training steps.
        model: the unwrapped model (``save_pretrained``).
        tokenizer: its tokenizer.
        state: ``trainer_state.pt`` content (tensors and plain values only).
        keep: checkpoints to keep (>= 1).
        save_model: writes the model into the staging directory instead of
            ``model.save_pretrained`` (a LoRA model: base weights plus ``adapter/``).
    """
    final = checkpoint_path(out_dir, step)
    staging = final.with_name(f".staging-{final.name}")
    shutil.rmtree(staging, ignore_errors=True)
    if save_model is None:
        model.save_pretrained(staging)
    else:
        save_model(staging)
    tokenizer.save_pretrained(staging)
    torch.save(dict(state), staging / STATE_FILE)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(staging, final)
    for old in list_checkpoints(out_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_trainer_state(checkpoint: Path) -> dict[str, Any]:
    """Read ``trainer_state.pt`` of a checkpoint.

    Raises:
        FileNotFoundError: not a complete checkpoint.
    """
    path = Path(checkpoint) / STATE_FILE
    if not path.is_file():
        raise FileNotFoundError(f"{checkpoint} is not a complete checkpoint (no {STATE_FILE})")
    return torch.load(path, weights_only=True)
