"""What the loop trains and samples from: the prepared policy, its optimizer, its generation.

``prepare_policy_parts`` applies LoRA / activation checkpointing, makes the reference policy
(when a reference KL is on), shards with FSDP2 when asked (generation then runs on a gathered
replica) and builds AdamW through ``accelerate``. ``make_generation`` picks the backend the
policy samples from: the trained model in process, or a served engine fed its weights.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from crsp_ops.config.engine_checks import COLOCATED_BACKEND
from crsp_ops.config.errors import ConfigError
from crsp_ops.config.selfplay_config import TrainSettings
from crsp_ops.config.steering_config import GenerationSettings
from crsp_ops.crsp.policy.accelerator import require_replicated
from crsp_ops.crsp.policy.generation import (
    ColocatedGeneration,
    InProcessGeneration,
    PolicyGeneration,
    ServerGeneration,
)
from crsp_ops.crsp.policy.peft_setup import exported, parameter_counts, prepare_policy
from crsp_ops.crsp.policy.sharding import (
    GenerationReplica,
    full_state,
    local_parameters,
    require_distributed,
    shard_policy,
    sharding_requested,
)
from crsp_ops.crsp.rl.reference_kl import ReferencePolicy
from crsp_ops.inference.hf_chat import checked_template_kwargs

logger = logging.getLogger(__name__)


@dataclass
class PolicyParts:
    """The trained policy and what goes with it."""

    model: Any  # accelerate-prepared (or FSDP2-sharded) policy
    optimizer: Any
    reference: ReferencePolicy | None  # the initial policy of the reference KL
    replica: GenerationReplica | None  # sharded: the full weights generation runs on
    trainable_params: int
    total_params: int
    accelerator: Any

    @property
    def sharded(self) -> bool:
        """Whether the policy is FSDP2-sharded."""
        return self.replica is not None

    @property
    def unwrapped(self) -> Any:
        """The model without accelerate/DDP wrappers (sharded: the FSDP module itself)."""
        return self.accelerator.unwrap_model(self.model)

    @property
    def generation_model(self) -> Any:
        """What generates: the trained model, or its gathered replica when sharded."""
        return self.replica.model if self.sharded else self.unwrapped

    def exported(self) -> Any:
        """What a generation server loads (``save_pretrained``): merged, gathered weights."""
        return self.replica if self.sharded else exported(self.unwrapped)

    def gathered_weights(self) -> dict[str, torch.Tensor] | None:
        """Sharded: the full state dict on rank 0 (a collective); otherwise ``None``."""
        return full_state(self.model, rank0_only=True) if self.sharded else None


def prepare_policy_parts(model: Any, train: TrainSettings, accelerator: Any) -> PolicyParts:
    """LoRA, reference, sharding and optimizer, in the order their RNG draws and copies need.

    Raises:
        ConfigError: sharding without a distributed launch, or DeepSpeed (one line, exit 2).
    """
    sharded = sharding_requested(train.sharding)
    if sharded:
        require_distributed()  # before the replica's copy
    else:
        require_replicated(accelerator)
    replica = GenerationReplica(model, accelerator.device) if sharded else None  # before LoRA
    model = prepare_policy(model, train)  # LoRA / activation checkpointing
    trainable, total = parameter_counts(model)
    # the initial policy: the adapter switched off, or a frozen copy (before any update)
    reference = ReferencePolicy(model).to(accelerator.device) if train.ref_kl_coef > 0 else None
    if sharded:
        model = shard_policy(model.to(accelerator.device), accelerator.device)
        logger.info("rank %d holds %d of %d parameters (FSDP2)", accelerator.process_index,
                    local_parameters(model), total)
    optimizer = make_optimizer(model, train, sharded=sharded)
    if not sharded:
        model, optimizer = accelerator.prepare(model, optimizer)
    return PolicyParts(model, optimizer, reference, replica, trainable, total, accelerator)


def make_optimizer(model: Any, train: TrainSettings, *, sharded: bool = False,
                   optimizer_class: type | None = None) -> Any:
    """AdamW over the trainable parameters at ``train``'s rate and weight decay.

    Fused: one kernel over every tensor (HF Trainer's default, ``adamw_torch_fused``); the
    per-tensor loop took ~2x as long on SmolLM2-135M's CPU step. Not under FSDP2's DTensors
    (``sharded``). ``optimizer_class``: an AdamW subclass (a benchmark reading gradients).
    """
    return (optimizer_class or torch.optim.AdamW)(
        [p for p in model.parameters() if p.requires_grad], lr=train.learning_rate,
        weight_decay=train.weight_decay, fused=not sharded)


def make_generation(generation: GenerationSettings, train: TrainSettings, accelerator: Any, *,
                    policy: Any, exported: Any, tokenizer: Any, out_dir: Path,
                    step: int) -> PolicyGeneration:
    """The configured backend: a served or colocated engine fed ``exported``, or ``policy``.

    Raises:
        ConfigError: ``generation.chat_template_kwargs`` the model's template does not read,
            or the colocated engine under several processes.
    """
    kwargs = checked_template_kwargs(tokenizer, generation.template_kwargs)
    if generation.backend == COLOCATED_BACKEND:
        if accelerator.num_processes > 1:  # each rank's engine would join vLLM's own group
            raise ConfigError(f"generation.backend={COLOCATED_BACKEND} runs in one process; "
                              "use generation.backend=openai_server under a multi-process "
                              "launch")
        return ColocatedGeneration(exported, tokenizer, engine_dir=Path(out_dir) / "colocated",
                                   generation=generation, step=step,
                                   chat_template_kwargs=kwargs)
    if generation.backend == "openai_server":
        served = Path(out_dir) / "served"  # one directory per rank: no two writers
        if accelerator.num_processes > 1:
            served = served / f"rank-{accelerator.process_index}"
        return ServerGeneration(exported, tokenizer, weights_root=served, generation=generation,
                                rank=accelerator.process_index,
                                reload_interval=train.server_reload_interval, step=step)
    device = accelerator.device  # cpu:N under a multi-CPU (gloo) launch: just "cpu"
    return InProcessGeneration(policy, tokenizer,
                               device="cpu" if device.type == "cpu" else str(device),
                               batch_size=generation.batch_size, chat_template_kwargs=kwargs)
