"""The ``Accelerator`` every CRSP stage (seeding, self-play) runs under."""

from __future__ import annotations

from typing import Any

import torch
from accelerate import Accelerator

from crsp_ops.inference.transformers_backend import resolve_device


def make_accelerator(mixed_precision: str, device: str) -> Any:
    """An ``Accelerator`` for ``device`` (``auto``/``cpu``/``cuda``) and mixed precision.

    Raises:
        RuntimeError: ``cuda`` asked for without CUDA (never a silent CPU fallback).
    """
    resolve_device(device)
    cpu = device == "cpu" or not torch.cuda.is_available()
    return Accelerator(mixed_precision=mixed_precision, cpu=cpu)
