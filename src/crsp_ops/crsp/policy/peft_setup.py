"""The trained model's memory modes: a LoRA adapter (peft) and activation checkpointing.

``prepare_policy`` builds what the optimizer sees; ``hf_state_dict`` saves a LoRA model as clean
HF weights (unmerged in checkpoints, merged for the final model).

Design: docs/design/trainer.md#peft_setup.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model, set_peft_model_state_dict
from peft.tuners.lora import LoraLayer
from peft.utils import load_peft_weights

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.selfplay_config import TrainSettings

logger = logging.getLogger(__name__)
ADAPTER_DIR = "adapter"  # a checkpoint's PEFT adapter (adapter_config.json + weights)
MERGED_DIR = "merged"  # a checkpoint's merged HF model (train.lora_save_merged)


def lora_config(train: TrainSettings) -> LoraConfig | None:
    """The peft config of ``train.lora_*``, ``None`` for full fine-tuning (rank 0)."""
    if train.lora_rank == 0:
        return None
    targets = train.lora_target_modules
    return LoraConfig(r=train.lora_rank, lora_alpha=train.lora_alpha,
                      lora_dropout=train.lora_dropout, task_type="CAUSAL_LM", bias="none",
                      target_modules="all-linear" if targets == ("all-linear",) else list(targets))


def prepare_policy(model: Any, train: TrainSettings) -> Any:
    """Apply activation checkpointing and LoRA as configured; return the model to train."""
    if train.gradient_checkpointing:
        enable_activation_checkpointing(model)
        model.config.use_cache = False  # generation turns it back on per call (HF)
    config = lora_config(train)
    if config is not None:
        # a bf16/fp16 base (model.dtype) still gets an fp32 adapter: the weights AdamW updates
        model = get_peft_model(model, config, autocast_adapter_dtype=True)
    trainable, total = parameter_counts(model)
    logger.info("trainable parameters: %d of %d (%.3f%%)", trainable, total,
                100.0 * trainable / max(total, 1))
    return model


def enable_activation_checkpointing(model: Any) -> None:
    """HF's activation checkpointing, non-reentrant (the name changed in transformers 5)."""
    kwargs = {"use_reentrant": False}
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def parameter_counts(model: Any) -> tuple[int, int]:
    """``(trainable, total)`` parameter counts."""
    params = list(model.parameters())
    return (sum(p.numel() for p in params if p.requires_grad), sum(p.numel() for p in params))


def is_lora(model: Any) -> bool:
    """Whether ``model`` is a peft model."""
    return isinstance(model, PeftModel)


def hf_state_dict(model: PeftModel, *, merged: bool,
                  state: dict[str, torch.Tensor] | None = None) -> dict[str, torch.Tensor]:
    """The base model's state dict under HF names, the adapter merged in or left out.

    ``state`` is the peft model's full state dict (``model.state_dict()`` names) when the live
    tensors are shards (``sharding.full_state``); by default the live weights, which are never
    modified (no merge/unmerge round trip that would leave rounding error in the frozen base).
    The merge is ``W + B·A·scaling`` (transposed for ``fan_in_fan_out`` layers).
    """
    state = model.state_dict() if state is None else state
    prefix = "base_model.model."
    weights = {name.removeprefix(prefix).replace(".base_layer.", "."): tensor.detach()
               for name, tensor in state.items() if "lora_" not in name}
    if merged:
        adapter = model.active_adapter
        for name, module in model.get_base_model().named_modules():
            if isinstance(module, LoraLayer) and adapter in module.lora_A:
                down = state[f"{prefix}{name}.lora_A.{adapter}.weight"]
                up = state[f"{prefix}{name}.lora_B.{adapter}.weight"]
                delta = (up @ down) * module.scaling[adapter]
                if getattr(module, "fan_in_fan_out", False):
                    delta = delta.T
                key = f"{name}.weight"
                weights[key] = weights[key] + delta.to(weights[key].dtype)
    return weights


def save_hf_model(model: Any, directory: Path, *, merged: bool = True,
                  state: dict[str, torch.Tensor] | None = None) -> None:
    """``save_pretrained`` of a plain model, or of a LoRA model's base (see the docstring).

    ``state``: the model's gathered full state dict when its live tensors are shards.
    """
    if not is_lora(model):
        model.save_pretrained(directory, state_dict=state)
        return
    model.get_base_model().save_pretrained(directory, state_dict=hf_state_dict(
        model, merged=merged, state=state))


class MergedView:
    """What a consumer of ``save_pretrained`` (a generation server) gets of a LoRA model."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def save_pretrained(self, directory: str | Path) -> None:
        """The merged HF model directory."""
        save_hf_model(self.model, Path(directory), merged=True)

    @property
    def config(self) -> Any:
        """The base model's HF config."""
        return self.model.get_base_model().config

    def hf_weights(self) -> dict[str, torch.Tensor]:
        """The merged weights under HF names (what ``save_pretrained`` writes), in memory."""
        return hf_state_dict(self.model, merged=True)


def exported(model: Any) -> Any:
    """``model`` itself, or a ``MergedView`` of a LoRA model."""
    return MergedView(model) if is_lora(model) else model


def save_adapter(model: Any, checkpoint: Path, *, merged: bool,
                 state: dict[str, torch.Tensor] | None = None) -> None:
    """A LoRA checkpoint's ``adapter/`` (and ``merged/`` when asked); nothing for full FT.

    ``state``: the model's gathered full state dict when its live tensors are shards.
    """
    if not is_lora(model):
        return
    model.save_pretrained(Path(checkpoint) / ADAPTER_DIR, state_dict=state)
    if merged:
        save_hf_model(model, Path(checkpoint) / MERGED_DIR, merged=True, state=state)


def adapter_state(model: Any, checkpoint: Path) -> dict[str, torch.Tensor]:
    """A checkpoint's adapter weights under the live model's names (the adapter name put back).

    For a sharded LoRA model (``sharding.load_full_weights``); ``load_adapter`` otherwise.
    """
    adapter = model.active_adapter
    weights = load_peft_weights(str(Path(checkpoint) / ADAPTER_DIR))
    return {name.replace(".lora_A.weight", f".lora_A.{adapter}.weight")
            .replace(".lora_B.weight", f".lora_B.{adapter}.weight"): tensor
            for name, tensor in weights.items()}


def load_adapter(model: Any, checkpoint: Path, *,
                 load_full: Callable[[Any, dict[str, torch.Tensor]], None] | None = None) -> bool:
    """Restore the adapter weights of ``checkpoint`` into a LoRA ``model``; False without one.

    ``load_full`` copies full tensors into a sharded model (``sharding.load_full_weights``).

    Raises:
        ConfigError: a LoRA model and a checkpoint without an adapter, or the reverse.
    """
    directory = Path(checkpoint) / ADAPTER_DIR
    if is_lora(model) != directory.is_dir():
        found = "an adapter" if directory.is_dir() else "no adapter"
        raise ConfigError(f"{checkpoint} holds {found} but train.lora_rank="
                         f"{'0' if not is_lora(model) else '>0'}: resume with the run's "
                         f"train.lora_rank")
    if not is_lora(model):
        return False
    if load_full is not None:
        load_full(model, adapter_state(model, checkpoint))
        return True
    result = set_peft_model_state_dict(model, load_peft_weights(str(directory)))
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(f"{directory}: adapter keys the model lacks: {unexpected[:3]}")
    return True
