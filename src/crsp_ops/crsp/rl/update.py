"""One policy-gradient update from a step's rollouts: TR-RPG or TRR++ through ``algorithms``.

Micro-batches bounded by a padded-token budget accumulate into one step-wide aggregation; a
step with no signal never applies a gradient; every rank takes part, with or without rollouts.

Design: docs/design/rl.md#update.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Any

import torch

from crsp_ops.crsp.policy.sharding import most_over_ranks
from crsp_ops.crsp.rl.algorithms import PolicyGradientAlgorithm, compute_advantages, policy_loss
from crsp_ops.crsp.rl.entropy_mask import high_entropy_mask
from crsp_ops.crsp.rl.loss_aggregation import step_denominator, token_weights
from crsp_ops.crsp.rl.micro_batching import (
    device_token_budget,
    micro_batches,
    prompt_micro_batches,
)
from crsp_ops.crsp.rl.optimizer_step import clip_gradients, optimizer_step
from crsp_ops.crsp.rl.reference_kl import ReferencePolicy, kl_estimate
from crsp_ops.crsp.rl.sampling_correction import METRICS, SamplingCorrection, corrected
from crsp_ops.crsp.rl.shared_prefix import (
    PrefixPlan,
    group_plan,
    prompt_keys,
    shared_prefix_scores,
)
from crsp_ops.crsp.rl.token_logprobs import token_scores
from crsp_ops.crsp.rl.trrpg import RatioClip
from crsp_ops.inference.rollouts import TrainingBatch


@dataclass(frozen=True)
class UpdateOptions:
    """Loss and optimisation settings of one update (values come from the config)."""

    algorithm: PolicyGradientAlgorithm
    betas: Mapping[str, float]
    log_ratio_clamp: float
    ratio_clip: RatioClip  # ε, (ε_low, ε_high) or None
    advantage_eps: float
    micro_batch_size: int
    update_epochs: int
    max_grad_norm: float  # 0: no clipping
    micro_batch_tokens: int = 0  # padded tokens per micro-batch; 0: ``token_budget`` (per device)
    on_policy: bool = False  # samples from the current weights: old log-probs = detached new
    loss_aggregation: str = "token_mean"  # loss_aggregation.AGGREGATIONS
    constant_normalizer: int = 1  # C of loss_aggregation="constant_normalizer"
    ref_kl_coef: float = 0.0  # > 0: KL to the initial policy (policy_update's ``reference``)
    ref_kl_estimator: str = "k3"  # reference_kl.ESTIMATORS
    lockstep: bool = False  # sharded (FSDP): every rank runs as many micro-batches as the most
    scale_rewards: str = "auto"  # advantages.SCALE_MODES or auto (the algorithm's own)
    step_when_flat: bool = False  # no advantage signal: zero gradient, AdamW still steps
    flat_group_advantage: str = "zero"  # advantages.FLAT_GROUP_MODES
    importance_sampling_level: str = "token"  # trrpg.IMPORTANCE_SAMPLING_LEVELS; sequence: GSPO
    top_entropy_quantile: float = 1.0  # < 1: policy loss on the top-entropy tokens only
    sampling_correction: SamplingCorrection | None = None  # engine samples: weight by π_old/μ


def mask_rows(batch: TrainingBatch, rows: Sequence[int]) -> TrainingBatch:
    """``batch`` with the loss mask of ``rows`` cleared (they still count in the advantages)."""
    if not rows:
        return batch
    loss_mask = batch.loss_mask.clone()
    loss_mask[list(rows)] = 0
    return replace(batch, loss_mask=loss_mask)


def truncated_rows(samples: Sequence[Any], rollout_keys: Sequence[tuple[str, str]]) -> list[int]:
    """Rows of the rollouts (``(env_name, example id)`` each) whose completion hit its budget.

    ``samples`` are the episode's role samples (``role``, ``task_type``, ``example_id``,
    ``completion.finish_reason``); a rollout's env name is ``role/task_type``.
    """
    cut = {(f"{s.role}/{s.task_type}", s.example_id) for s in samples
           if s.completion.finish_reason == "length"}
    return [row for row, key in enumerate(rollout_keys) if key in cut]


def policy_temperature(logprob_semantics: str, sampling_temperature: float) -> float:
    """Temperature the current policy's log-probs must use to match the behaviour log-probs.

    >>> policy_temperature("processed", 0.7), policy_temperature("raw", 0.7)
    (0.7, 1.0)
    """
    return sampling_temperature if logprob_semantics == "processed" else 1.0


def token_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float, *, first: int = 1) -> torch.Tensor:
    """The log-probs ``(B, T)`` of ``token_logprobs.token_scores``."""
    return token_scores(model, input_ids, attention_mask, temperature, first=first)[0]


def _weighted_metrics(parts: list[tuple[float, dict[str, float]]]) -> dict[str, float]:
    """Token-weighted means of the per-micro-batch metrics (max for ``ratio_max``).

    ``loss`` is the sum of the micro-batches' losses: each already carries its share.
    """
    keys = ["kl", "ratio_mean", "clip_fraction", "log_ratio_clamped_fraction"]
    keys += ["ref_kl"] if "ref_kl" in parts[0][1] else []
    keys += [key for key in METRICS if key in parts[0][1] and not key.endswith("_max")]
    out = {key: sum(w * m[key] for w, m in parts) for key in keys}
    out["loss"] = sum(m["loss"] for _, m in parts)
    out.update({key: max(m[key] for _, m in parts) for key in ("ratio_max", *METRICS)
                if key.endswith("_max") and key in parts[0][1]})
    return out


def tokens_over_ranks(accelerator: Any, local_tokens: float) -> float:
    """Response tokens of the step summed over every process (a collective when several)."""
    if accelerator.num_processes == 1:
        return local_tokens
    total = torch.tensor([local_tokens], dtype=torch.float64, device=accelerator.device)
    return float(accelerator.reduce(total, reduction="sum").item())


def advantage_signal_over_ranks(accelerator: Any, advantages: torch.Tensor | None) -> float:
    """Sum of |advantage| over every process's rows (a collective when several)."""
    local = 0.0 if advantages is None else float(advantages.abs().sum())
    return tokens_over_ranks(accelerator, local)


def _idle_pass(model, accelerator, reference: ReferencePolicy | None = None) -> None:
    """A zero-loss backward that joins the ranks' collectives without rollouts of its own.

    DDP: one, for a rank without rollouts (its gradient all-reduce). Sharded (``lockstep``):
    one per micro-batch this rank lacks, with the reference forward a real pass makes (under
    LoRA the reference is the sharded model itself, so that forward is a collective too).
    """
    token = torch.zeros((1, 1), dtype=torch.long, device=accelerator.device)  # (1, 1)
    mask = torch.ones_like(token)
    if reference is not None:
        with torch.no_grad(), reference.active() as ref_model:
            ref_model(input_ids=token, attention_mask=mask)
    with accelerator.autocast():
        logits = model(input_ids=token, attention_mask=mask).logits
        accelerator.backward(logits.sum() * 0.0)


def micro_logprobs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   temperature: float, first: int, plan: PrefixPlan | None, *,
                   entropy: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """``token_scores``, through ``plan``'s shared prompt encodings when there is one."""
    if plan is not None:
        shared = shared_prefix_scores(model, plan, input_ids, temperature, entropy=entropy)
        if shared is not None:
            return shared
    return token_scores(model, input_ids, attention_mask, temperature, first=first,
                        entropy=entropy)


def _reference_logprobs(reference: ReferencePolicy, input_ids, attention_mask,
                        temperature: float, first: int, plan: PrefixPlan | None) -> torch.Tensor:
    """``micro_logprobs`` of the initial policy, without a graph."""
    with torch.no_grad(), reference.active() as ref_model:
        return micro_logprobs(ref_model, input_ids, attention_mask, temperature, first, plan)[0]


def _one_pass(model, accelerator, batch: TrainingBatch, advantages, roles, options,
              temperature: float, scale: float, groups: list[list[int]],
              current: dict[int, tuple], denominator: float,
              reference: ReferencePolicy | None, plans: list[PrefixPlan | None]
              ) -> dict[str, float]:
    """One gradient-accumulation pass over ``groups``; fills ``current`` on the first pass.

    ``plans``: each group's shared prompt encodings (``None``: every row encoded whole).
    ``current``: per micro-batch, the trainer's old log-probs (on-policy, or corrected), the
    sampling weights and their metrics.
    """
    own_old = options.on_policy or options.sampling_correction is not None
    total = float(batch.loss_mask.sum().clamp(min=1))
    lengths = batch.attention_mask.sum(1)  # (B,) on the host: no device sync below
    parts = []
    device, quantile = accelerator.device, options.top_entropy_quantile
    for index, group in enumerate(groups):
        rows = torch.tensor(group)
        width = int(lengths[rows].max())
        mask_host = batch.loss_mask[rows, :width]  # (b, t)
        responding = mask_host.any(0).nonzero()
        first = int(responding[0]) if len(responding) else width
        weight = float(mask_host.sum()) / total
        mask = mask_host.to(device)
        sync = accelerator.no_sync(model) if index < len(groups) - 1 else nullcontext()
        input_ids = batch.input_ids[rows, :width].to(device)
        attention_mask = batch.attention_mask[rows, :width].to(device)
        plan = plans[index]
        with sync, accelerator.autocast():
            logp_new, entropies = micro_logprobs(model, input_ids, attention_mask, temperature,
                                                 first, plan, entropy=quantile < 1)
            sampler = batch.old_logprobs[rows, :width]
            if own_old and index not in current:  # π_old: fixed for the later epochs
                current[index] = (logp_new.detach(), None, {}) if options.on_policy else \
                    corrected(logp_new, sampler.to(device), mask, options.sampling_correction)
            old, weights, correction = current[index] if own_old else \
                (sampler.to(device), None, {})
            ref_kl = None
            if reference is not None:
                ref_logp = _reference_logprobs(reference, input_ids, attention_mask,
                                               temperature, first, plan)
                ref_kl = kl_estimate(logp_new, ref_logp, options.ref_kl_estimator)
            loss, metrics = policy_loss(
                options.algorithm, logp_new, old, advantages[rows].to(device), mask,
                [roles[i] for i in group], betas=options.betas,
                log_ratio_clamp=options.log_ratio_clamp, ratio_clip=options.ratio_clip,
                ref_kl=ref_kl, ref_coef=options.ref_kl_coef,
                weights=token_weights(mask, options.loss_aggregation, denominator=denominator,
                                      normalizer=options.constant_normalizer),
                importance_sampling_level=options.importance_sampling_level,
                token_mask=None if entropies is None else
                high_entropy_mask(entropies, mask, quantile), sampling_weights=weights)
            accelerator.backward(loss * scale)
        parts.append((weight, {**metrics, **correction}))
    return _weighted_metrics(parts)


def policy_update(model: Any, optimizer: Any, accelerator: Any, batch: TrainingBatch | None,
                  roles: Sequence[str], baseline_groups: Sequence[Hashable],
                  options: UpdateOptions,
                  *, temperature: float,
                  reference: ReferencePolicy | None = None) -> dict[str, float]:
    """Compute task-relative advantages and take ``update_epochs`` optimizer steps.

    With several processes every rank must call it (it is a collective), ``batch=None`` on a
    rank whose step produced no rollout (design: docs/design/rl.md#update).

    Args:
        model: the (accelerate-prepared) policy, in train mode.
        optimizer: its (prepared) optimizer.
        accelerator: the ``accelerate.Accelerator``.
        batch: padded rollouts of this rank's step, ``None`` when it has none.
        roles: role of each row.
        baseline_groups: baseline group of each row (its task type, or its task:
            ``advantages.baseline_group``); rows of one group and role share a baseline.
        options: algorithm and optimisation settings.
        temperature: from ``policy_temperature``.
        reference: the initial policy of the reference-KL term (``options.ref_kl_coef``).

    Returns:
        ``{}`` when no rank had a rollout. Otherwise the last epoch's ``loss``, ``kl``,
        ``ratio_mean``, ``ratio_max``, ``clip_fraction``, ``log_ratio_clamped_fraction``,
        ``grad_norm``, ``update_skipped`` (1: every advantage of every rank was 0: no step, or
        a zero-gradient one with ``step_when_flat``),
        ``advantage_abs_mean`` (ranks with rollouts), ``ref_kl`` with a reference, and
        with a sampling correction ``is_ratio_mean``, ``is_capped_fraction``,
        ``sampling_logp_diff_mean`` and ``sampling_logp_diff_max``.
    """
    shares = _rank_shares(accelerator, batch, options.loss_aggregation)
    if shares is None:
        return {}
    scale, local = shares
    if reference is not None and options.ref_kl_coef == 0:
        reference = None
    advantages, skip = _advantages(accelerator, batch, roles, baseline_groups, options)
    params = [p for p in model.parameters() if p.requires_grad]
    groups, plans = _row_groups(model, accelerator, batch, options, params)
    current: dict[int, tuple] = {}  # trainer's old log-probs (and weights) per micro-batch
    metrics: dict[str, float] = {}
    idle = (most_over_ranks(accelerator, len(groups)) - len(groups) if options.lockstep
            else int(batch is None))
    for _ in range(options.update_epochs):
        optimizer.zero_grad(set_to_none=True)
        if batch is not None:
            metrics = _one_pass(model, accelerator, batch, advantages, list(roles), options,
                                temperature, scale, groups, current, local, reference, plans)
        for _ in range(idle):
            _idle_pass(model, accelerator, reference if options.lockstep else None)
        metrics["grad_norm"] = clip_gradients(accelerator, params, options.max_grad_norm,
                                             lockstep=options.lockstep)
        if not optimizer_step(optimizer, params, skip, options.step_when_flat):
            break  # every rank agrees: the weights, hence later epochs, would not change
    optimizer.zero_grad(set_to_none=True)
    metrics["update_skipped"] = float(skip)
    if advantages is not None:
        metrics["advantage_abs_mean"] = float(advantages.abs().mean())
    return metrics


def _row_groups(model: Any, accelerator: Any, batch: TrainingBatch | None,
                options: UpdateOptions, params: list
                ) -> tuple[list[list[int]], list[PrefixPlan | None]]:
    """The update's micro-batches and each one's shared prompt encodings, planned once.

    By prompt when rows may share its encoding (``prompt_keys``), else by length.
    """
    if batch is None:
        return [], []
    keys = prompt_keys(model, batch, lockstep=options.lockstep)
    max_tokens = (options.micro_batch_tokens
                  or device_token_budget(model, accelerator.device, params))
    lengths = batch.attention_mask.sum(1).tolist()
    if keys is None:
        groups = micro_batches(lengths, options.micro_batch_size, max_tokens)
        return groups, [None] * len(groups)
    groups = prompt_micro_batches(keys, batch.prompt_lengths.tolist(), lengths,
                                  options.micro_batch_size, max_tokens)
    return groups, [group_plan(batch, keys, group) for group in groups]


def _rank_shares(accelerator: Any, batch: TrainingBatch | None, aggregation: str
                 ) -> tuple[float, float] | None:
    """``(loss scale, aggregation denominator)`` of this rank; ``None``: no rank has a token.

    The scale ``world_size * local / global`` makes DDP's gradient average one aggregation
    over every rank's rollouts.
    """
    local_tokens = 0.0 if batch is None else float(batch.loss_mask.sum())
    global_tokens = tokens_over_ranks(accelerator, local_tokens)
    if global_tokens == 0:
        return None
    local = local_tokens
    if aggregation != "token_mean":  # rows with a loss token, over the ranks
        local = 0.0 if batch is None else step_denominator(batch.loss_mask, aggregation)
    scale = accelerator.num_processes * local / (
        global_tokens if aggregation == "token_mean" else tokens_over_ranks(accelerator, local))
    return scale, local


def _advantages(accelerator: Any, batch: TrainingBatch | None, roles: Sequence[str],
                baseline_groups: Sequence[Hashable], options: UpdateOptions
                ) -> tuple[torch.Tensor | None, bool]:
    """This rank's advantages ``(B,)`` and whether every rank's training rows have none."""
    advantages = None
    if batch is not None:
        advantages = compute_advantages(options.algorithm, batch.episode_rewards,
                                        list(baseline_groups), list(roles),
                                        eps=options.advantage_eps,
                                        scale=options.scale_rewards,
                                        flat=options.flat_group_advantage)  # (B,)
    training_rows = None if batch is None else batch.loss_mask.sum(1) > 0  # (B,)
    skip = advantage_signal_over_ranks(
        accelerator, None if advantages is None else advantages * training_rows) == 0
    return advantages, skip
