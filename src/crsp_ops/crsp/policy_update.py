"""One policy-gradient update from a step's rollouts: TR-RPG or TRR++ through ``algorithms``.

Log-probs of the current policy are computed on the padded ``TrainingBatch`` with the logits
divided by the sampling temperature whenever the behaviour log-probs are ``processed`` (they
then include the temperature), so an on-policy ratio is exactly 1 and the importance weights
measure only real staleness (a server serving older weights, or a second update epoch).
Micro-batches accumulate gradients; each micro loss is weighted by its share of the step's
response tokens, so the result equals one token-mean over the whole step.

Across ``accelerate`` processes the step is every rank's rollouts: each rank's loss is scaled
by ``world_size * local_tokens / global_tokens`` so that DDP's gradient average is that one
token mean. A rank with no rollout still takes part (``batch=None``): DDP all-reduces
gradients inside the backward pass, so a rank that skipped it would leave the others waiting
forever. It runs one forward of a single token with a zero loss per epoch (zero gradients
that reach every parameter) and the same optimizer steps, so the replicas stay identical.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F

from crsp_ops.crsp.algorithms import PolicyGradientAlgorithm, compute_advantages, policy_loss
from crsp_ops.crsp.token_logprobs import gathered_logprobs
from crsp_ops.inference.rollouts import TrainingBatch


@dataclass(frozen=True)
class UpdateOptions:
    """Loss and optimisation settings of one update (values come from the config)."""

    algorithm: PolicyGradientAlgorithm
    betas: Mapping[str, float]
    log_ratio_clamp: float
    ratio_clip: float | None
    advantage_eps: float
    micro_batch_size: int
    update_epochs: int
    max_grad_norm: float  # 0: no clipping


def policy_temperature(logprob_semantics: str, sampling_temperature: float) -> float:
    """Temperature the current policy's log-probs must use to match the behaviour log-probs.

    >>> policy_temperature("processed", 0.7), policy_temperature("raw", 0.7)
    (0.7, 1.0)
    """
    return sampling_temperature if logprob_semantics == "processed" else 1.0


def token_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float) -> torch.Tensor:
    """``logp[b, t] = log π(input_ids[b, t] | input_ids[b, :t])``, position-aligned, ``(B, T)``.

    Position 0 has no prediction and gets 0 (it is a prompt token, masked out anyway).
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask).logits  # (B, T, V)
    # predictions for positions 1..T-1, without a full-vocabulary float32 copy
    chosen = gathered_logprobs(logits[:, :-1], input_ids[:, 1:], temperature=temperature)
    return F.pad(chosen, (1, 0))  # (B, T)


def _micro_slices(size: int, micro: int) -> list[slice]:
    return [slice(start, min(start + micro, size)) for start in range(0, size, micro)]


def _weighted_metrics(parts: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    """Token-weighted means of the per-micro-batch metrics (max for ``ratio_max``)."""
    out = {key: sum(w * m[key] for w, m in parts) for key in
           ("loss", "kl", "ratio_mean", "clip_fraction", "log_ratio_clamped_fraction")}
    out["ratio_max"] = max(m["ratio_max"] for _, m in parts)
    return out


def tokens_over_ranks(accelerator: Any, local_tokens: float) -> float:
    """Response tokens of the step summed over every process (a collective when several)."""
    if accelerator.num_processes == 1:
        return local_tokens
    total = torch.tensor([local_tokens], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(total, reduction="sum").item())


def _idle_pass(model, accelerator) -> None:
    """A zero-loss backward for a rank without rollouts: it joins DDP's gradient all-reduce."""
    token = torch.zeros((1, 1), dtype=torch.long, device=accelerator.device)  # (1, 1)
    with accelerator.autocast():
        logits = model(input_ids=token, attention_mask=torch.ones_like(token)).logits
        accelerator.backward(logits.sum() * 0.0)


def _one_pass(model, accelerator, batch: TrainingBatch, advantages, roles, options,
              temperature: float, scale: float) -> dict[str, float]:
    total = float(batch.loss_mask.sum().clamp(min=1))
    parts = []
    slices = _micro_slices(batch.input_ids.shape[0], options.micro_batch_size)
    for index, rows in enumerate(slices):
        device = accelerator.device
        mask = batch.loss_mask[rows].to(device)  # (b, T)
        weight = float(mask.sum()) / total
        sync = accelerator.no_sync(model) if index < len(slices) - 1 else nullcontext()
        with sync, accelerator.autocast():
            logp_new = token_logprobs(model, batch.input_ids[rows].to(device),
                                      batch.attention_mask[rows].to(device), temperature)
            loss, metrics = policy_loss(
                options.algorithm, logp_new, batch.old_logprobs[rows].to(device),
                advantages[rows].to(device), mask, roles[rows], betas=options.betas,
                log_ratio_clamp=options.log_ratio_clamp, ratio_clip=options.ratio_clip)
            accelerator.backward(loss * (weight * scale))
        parts.append((weight, metrics))
    return _weighted_metrics(parts)


def policy_update(model: Any, optimizer: Any, accelerator: Any, batch: TrainingBatch | None,
                  roles: Sequence[str], task_types: Sequence[str], options: UpdateOptions,
                  *, temperature: float) -> dict[str, float]:
    """Compute task-relative advantages and take ``update_epochs`` optimizer steps.

    With several processes every rank must call it (it is a collective), ``batch=None`` on a
    rank whose step produced no rollout (see the module docstring).

    Args:
        model: the (accelerate-prepared) policy, in train mode.
        optimizer: its (prepared) optimizer.
        accelerator: the ``accelerate.Accelerator``.
        batch: padded rollouts of this rank's step, ``None`` when it has none.
        roles: role of each row.
        task_types: task type of each row.
        options: algorithm and optimisation settings.
        temperature: from ``policy_temperature``.

    Returns:
        ``{}`` when no rank had a rollout (no step taken). Otherwise metrics of the last epoch:
        ``loss``, ``kl``, ``ratio_mean``, ``ratio_max``, ``clip_fraction``,
        ``log_ratio_clamped_fraction``, ``advantage_abs_mean`` (ranks with rollouts only) and
        ``grad_norm``.
    """
    local_tokens = 0.0 if batch is None else float(batch.loss_mask.sum())
    global_tokens = tokens_over_ranks(accelerator, local_tokens)
    if global_tokens == 0:
        return {}
    scale = accelerator.num_processes * local_tokens / global_tokens
    advantages = None
    if batch is not None:
        advantages = compute_advantages(options.algorithm, batch.episode_rewards,
                                        list(task_types), list(roles),
                                        eps=options.advantage_eps)  # (B,)
    role_list = list(roles)
    params = [p for p in model.parameters() if p.requires_grad]
    metrics: dict[str, float] = {}
    for _ in range(options.update_epochs):
        optimizer.zero_grad(set_to_none=True)
        if batch is None:
            _idle_pass(model, accelerator)
        else:
            metrics = _one_pass(model, accelerator, batch, advantages, role_list, options,
                                temperature, scale)
        if options.max_grad_norm > 0:
            norm = accelerator.clip_grad_norm_(params, options.max_grad_norm)
        else:
            norm = torch.linalg.vector_norm(torch.stack(
                [p.grad.detach().norm() for p in params if p.grad is not None]))
        metrics["grad_norm"] = float(norm)
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if advantages is not None:
        metrics["advantage_abs_mean"] = float(advantages.abs().mean())
    return metrics
