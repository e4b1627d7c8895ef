"""Sharded training (FSDP2): parameters, gradients and AdamW state split over the ranks.

Generation runs on a full-weight ``GenerationReplica``, never on the sharded module, whose
forward is a collective every rank must join.

Design: docs/design/trainer.md#sharding.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    set_model_state_dict,
    set_optimizer_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard

from crsp_ops.config.errors import ConfigError
from crsp_ops.crsp.policy.peft_setup import hf_state_dict, is_lora

SHARDING_ENV = "ACCELERATE_USE_FSDP"  # set by `accelerate launch` with an FSDP config
OPTIMIZER_FORMAT = "fqn-full"  # a sharded run's optimizer state: full tensors by parameter name


def sharding_requested(sharding: str, environ: dict[str, str] | None = None) -> bool:
    """Whether to shard: ``train.sharding=fsdp2`` or an accelerate FSDP config in the env.

    >>> sharding_requested("none", {}), sharding_requested("fsdp2", {})
    (False, True)
    >>> sharding_requested("none", {"ACCELERATE_USE_FSDP": "true"})
    True
    """
    environ = os.environ if environ is None else environ
    return sharding == "fsdp2" or environ.get(SHARDING_ENV, "").lower() in ("1", "true")


def shard_units(model: Any) -> list[torch.nn.Module]:
    """The modules sharded one by one: instances of the model's ``_no_split_modules`` classes.

    Raises:
        ConfigError: the model names no such class (FSDP would shard it as one unit).
    """
    base = model.get_base_model() if is_lora(model) else model
    names = set(getattr(base, "_no_split_modules", None) or ())
    units = [module for module in base.modules() if type(module).__name__ in names]
    if not units:
        raise ConfigError(f"train.sharding: {type(base).__name__} names no decoder-layer class "
                          "(_no_split_modules) to shard; use train.sharding=none")
    return units


def require_distributed() -> None:
    """Raise unless a process group is up (sharding needs ``accelerate launch`` / torchrun)."""
    if not dist.is_initialized():
        raise ConfigError("train.sharding=fsdp2 needs a distributed launch (accelerate launch "
                          "or torchrun with 2 or more processes)")


def shard_policy(model: Any, device: torch.device) -> Any:
    """``fully_shard`` each decoder layer, then the root, over all ranks; returns ``model``."""
    require_distributed()
    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    for unit in shard_units(model):
        fully_shard(unit, mesh=mesh)
    fully_shard(model, mesh=mesh)
    return model


def local_parameters(model: Any) -> int:
    """Parameters this rank holds: its shards of the sharded ones, all of the others."""
    return sum((p.to_local() if hasattr(p, "to_local") else p).numel()
               for p in model.parameters())


def full_state(model: Any, *, rank0_only: bool = False) -> dict[str, torch.Tensor]:
    """The sharded model's full state dict (a collective: every rank calls it).

    ``rank0_only``: gathered to rank 0's CPU memory (others get ``{}``), for checkpoints.
    """
    return get_model_state_dict(model, options=StateDictOptions(
        full_state_dict=True, cpu_offload=rank0_only))


def hf_weights(model: Any, state: dict[str, torch.Tensor], *, merged: bool = True
               ) -> dict[str, torch.Tensor]:
    """HF-named weights of a gathered ``state``: as they are, or a LoRA model's base + delta."""
    return hf_state_dict(model, merged=merged, state=state) if is_lora(model) else state


def full_optimizer_state(model: Any, optimizer: Any) -> dict[str, Any]:
    """The optimizer state of every parameter, by name, on rank 0 (a collective)."""
    return get_optimizer_state_dict(model, optimizer, options=StateDictOptions(
        full_state_dict=True, cpu_offload=True))


def load_full_optimizer_state(model: Any, optimizer: Any, state: dict[str, Any]) -> None:
    """Restore ``full_optimizer_state``'s output on every rank (each holds the whole dict)."""
    set_optimizer_state_dict(model, optimizer, optim_state_dict=state,
                             options=StateDictOptions(full_state_dict=True))


def load_full_weights(model: Any, state: dict[str, torch.Tensor]) -> None:
    """Copy full tensors (a subset of the keys, e.g. an adapter) into the sharded model."""
    set_model_state_dict(model, state, options=StateDictOptions(full_state_dict=True,
                                                                strict=False))


class GenerationReplica:
    """A plain copy of the policy's full weights that a rank generates from (see the docstring).

    Args:
        model: the policy *before* LoRA and sharding (copied; the copy is never trained).
        device: where the copy lives (the rank's device).
    """

    def __init__(self, model: Any, device: torch.device | str = "cpu") -> None:
        self.model = copy.deepcopy(model).to(device)
        self.model.requires_grad_(False)
        self.model.eval()

    @torch.no_grad()
    def refresh(self, sharded: Any) -> None:
        """Gather the sharded policy's weights into the copy (every rank calls it)."""
        weights = hf_weights(sharded, full_state(sharded))
        missing, unexpected = self.model.load_state_dict(weights, strict=False)
        tied = set(getattr(self.model, "_tied_weights_keys", None) or ())
        if unexpected or set(missing) - tied:
            raise RuntimeError(f"the generation replica does not match the policy: missing "
                               f"{sorted(set(missing) - tied)[:3]}, unexpected {unexpected[:3]}")

    def save_pretrained(self, directory: Any) -> None:
        """The replica's HF directory (what a generation server loads)."""
        self.model.save_pretrained(directory)

    @property
    def config(self) -> Any:
        """The replica's HF config."""
        return self.model.config

    def hf_weights(self) -> dict[str, torch.Tensor]:
        """The replica's weights under HF names, in memory."""
        return self.model.state_dict()


def most_over_ranks(accelerator: Any, count: int) -> int:
    """The largest ``count`` over the ranks (``count`` itself with one process)."""
    if accelerator.num_processes == 1:
        return count
    value = torch.tensor([count], dtype=torch.int64, device=accelerator.device)
    dist.all_reduce(value, op=dist.ReduceOp.MAX)
    return int(value.item())


def as_float(norm: Any) -> float:
    """A gradient norm as a float, gathered first when it is a DTensor."""
    return float(norm.full_tensor() if hasattr(norm, "full_tensor") else norm)
