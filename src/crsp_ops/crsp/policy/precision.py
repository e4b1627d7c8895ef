"""The dtype a trained model's weights are loaded in and the one it computes in (``model.dtype``).

``auto`` keeps the checkpoint's dtype; ``fp32`` / ``bf16`` / ``fp16`` name the compute dtype
while the weights the optimizer updates stay fp32, as PEFT and AMP users expect.

Design: docs/design/trainer.md#precision.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from crsp_ops.config.errors import ConfigError
from crsp_ops.inference.transformers_backend import resolve_device

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Precision:
    """Where ``model.dtype`` puts a training run's weights and its compute."""

    dtype: str  # model.dtype as set: "auto" | "fp32" | "bf16" | "fp16"
    load_dtype: torch.dtype | None  # from_pretrained's dtype; None: the checkpoint's own
    mixed_precision: str  # accelerate's: "no" | "bf16" | "fp16"

    def tags(self, model: Any) -> dict[str, str]:
        """MLflow tags: the loaded weights' dtype(s) and the compute's mixed precision."""
        return {"model.weights_dtype": weights_dtype(model),
                "model.mixed_precision": self.mixed_precision}


def training_precision(dtype: str, device: str, *, lora: bool = False,
                       mixed_precision: str = "no") -> Precision:
    """The load dtype and accelerate mixed precision of ``model.dtype`` for a training run.

    Args:
        dtype: ``model.dtype``.
        device: ``model.device`` (``auto`` / ``cpu`` / ``cuda``), where the model trains.
        lora: whether the base is frozen under a LoRA adapter (``train.lora_rank > 0``).
        mixed_precision: ``train.mixed_precision`` (``no`` for a stage without one).

    Raises:
        ConfigError: the device cannot train in ``dtype``, or ``train.mixed_precision`` asks
            for the other half-precision dtype.

    >>> training_precision("bf16", "cpu", lora=True)
    Precision(dtype='bf16', load_dtype=torch.bfloat16, mixed_precision='bf16')
    >>> training_precision("bf16", "cpu").load_dtype  # full fine-tuning: fp32 master weights
    torch.float32
    >>> training_precision("auto", "cpu", mixed_precision="bf16")  # as before model.dtype
    Precision(dtype='auto', load_dtype=None, mixed_precision='bf16')
    """
    if dtype == "auto":
        return Precision(dtype, None, mixed_precision)
    require_trainable_on(dtype, device)
    if dtype != "fp32":
        if mixed_precision not in ("no", dtype):
            raise ConfigError(
                f"model.dtype={dtype} computes in {dtype} but train.mixed_precision="
                f"{mixed_precision}: set train.mixed_precision=no (model.dtype implies it) "
                f"or model.dtype={mixed_precision}")
        mixed_precision = dtype
    return Precision(dtype, DTYPES[dtype] if lora else torch.float32, mixed_precision)


def require_trainable_on(dtype: str, device: str) -> None:
    """Raise when ``device`` (``model.device``) cannot train in ``dtype``.

    Raises:
        ConfigError: fp16 on a CPU (accelerate applies neither fp16 autocast nor loss scaling
            there), or bf16 on a GPU without bf16.
    """
    kind = resolve_device(device).type
    if dtype == "fp16" and kind == "cpu":
        raise ConfigError("model.dtype=fp16 cannot train on cpu (accelerate runs neither fp16 "
                          "autocast nor loss scaling there): use model.dtype=bf16 or fp32")
    if dtype == "bf16" and kind == "cuda" and not torch.cuda.is_bf16_supported():
        raise ConfigError(f"model.dtype=bf16 is not supported on cuda "
                          f"({torch.cuda.get_device_name()}): use model.dtype=fp16 or fp32")


def weights_dtype(model: Any) -> str:
    """The parameters' dtypes, sorted and comma-separated (``float32``; ``bfloat16,float32``).

    >>> weights_dtype(torch.nn.Linear(2, 2).to(torch.bfloat16))
    'bfloat16'
    """
    return ",".join(sorted({str(p.dtype).removeprefix("torch.") for p in model.parameters()}))
