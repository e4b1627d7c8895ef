"""The ``Accelerator`` every CRSP stage (seeding, self-play) runs under.

Sharded training (FSDP through an accelerate config) is refused by the self-play trainer
(``require_replicated``): its in-process generation, checkpoints and replica check need every
rank to hold the whole model (docs/scaling.md, "Sharded training", says what was tried).
"""

from __future__ import annotations

from typing import Any

import torch
from accelerate import Accelerator
from accelerate.utils import DistributedType

from crsp_ops.config.errors import ConfigError
from crsp_ops.inference.transformers_backend import resolve_device


def make_accelerator(mixed_precision: str, device: str) -> Any:
    """An ``Accelerator`` for ``device`` (``auto``/``cpu``/``cuda``) and mixed precision.

    Raises:
        RuntimeError: ``cuda`` asked for without CUDA (never a silent CPU fallback).
    """
    resolve_device(device)
    cpu = device == "cpu" or not torch.cuda.is_available()
    return Accelerator(mixed_precision=mixed_precision, cpu=cpu)


def require_replicated(accelerator: Any) -> None:
    """Raise unless every process holds the whole model (no FSDP / DeepSpeed sharding).

    Raises:
        ConfigError: the accelerate config shards the model; the message names the fix.
    """
    kind = getattr(accelerator, "distributed_type", DistributedType.NO)
    if kind in (DistributedType.FSDP, DistributedType.DEEPSPEED):
        raise ConfigError(f"accelerate's {kind.value} shards the model, which the CRSP trainer "
                         "does not support yet (in-process generation and checkpoints need "
                         "full weights on every rank); use a DDP config (--multi_gpu) with "
                         "train.lora_rank and train.gradient_checkpointing to fit the model")
