"""The ``Accelerator`` every CRSP stage (seeding, self-play) runs under.

The self-play trainer shards with FSDP2 itself (``policy.sharding``: ``train.sharding=fsdp2`` or
an accelerate FSDP config), so the accelerator never wraps a sharded model; DeepSpeed is
refused (``require_replicated``; docs/scaling.md, "Sharded training").
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
    """Raise when the accelerate config asks for DeepSpeed, which the trainer does not run.

    Raises:
        ConfigError: a DeepSpeed config; the message names the ways that work.
    """
    kind = getattr(accelerator, "distributed_type", DistributedType.NO)
    if kind == DistributedType.DEEPSPEED:
        raise ConfigError("accelerate's DeepSpeed is not supported by the CRSP trainer; shard "
                          "with FSDP2 instead (an accelerate FSDP config or "
                          "train.sharding=fsdp2), or fit the model with train.lora_rank and "
                          "train.gradient_checkpointing under DDP (--multi_gpu)")
