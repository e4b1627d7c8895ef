"""Task-relative, sequence-level advantages and token placement of sequence rewards.

Each (task type, role) pair gets its own baseline, since rewards of different pairs live on
different scales (Absolute Zero's TRR++); flat groups and tiny groups have explicit rules.

Design: docs/design/rl.md#advantages.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import torch

from crsp_ops.crsp.rl.registry import register_adv_est

SCALE_MODES = ("group", "batch", "none")  # train.scale_rewards (besides auto)
FLAT_GROUP_MODES = ("zero", "step")  # train.flat_group_advantage


def task_relative_advantages(rewards: torch.Tensor, task_types: Sequence[Hashable],
                             roles: Sequence[Hashable], *, scale: str, eps: float,
                             flat: str = "zero") -> torch.Tensor:
    """Sequence-level advantages with one baseline per (task type, role) group.

    Args:
        rewards: sequence rewards, shape ``(B,)``.
        task_types: baseline group of each sample (``B`` items): its task type, or its task
            (``baseline_group``).
        roles: role of each sample (``B`` items): "propose", "solve" or "critique".
        scale: ``group``, ``batch`` or ``none`` (design: docs/design/rl.md#advantages).
        eps: standard deviations below this are treated as zero (> 0).
        flat: ``zero`` or ``step``: a flat group's baseline (design: docs/design/rl.md#advantages).

    Returns:
        Advantages, shape ``(B,)``, same dtype as ``rewards``.

    >>> task_relative_advantages(torch.tensor([1., 0., 5.]), ["code_i"] * 3,
    ...                          ["solve", "solve", "propose"], scale="none", eps=1e-6)
    tensor([ 0.5000, -0.5000,  0.0000])
    >>> task_relative_advantages(torch.tensor([1., 1., 0., 0.]), ["a", "a", "b", "b"],
    ...                          ["solve"] * 4, scale="group", eps=1e-6, flat="step")
    tensor([ 1.,  1., -1., -1.])
    """
    if rewards.dim() != 1:
        raise ValueError(f"rewards must have shape (B,), got {tuple(rewards.shape)}")
    if not len(task_types) == len(roles) == rewards.shape[0]:
        raise ValueError(f"{rewards.shape[0]} rewards, {len(task_types)} task types and "
                         f"{len(roles)} roles: give one of each per sample")
    if eps <= 0:
        raise ValueError(f"eps must be > 0, got {eps}")
    if scale not in SCALE_MODES:
        raise ValueError(f"scale must be one of {SCALE_MODES}, got {scale!r}")
    if flat not in FLAT_GROUP_MODES:
        raise ValueError(f"flat must be one of {FLAT_GROUP_MODES}, got {flat!r}")
    if not torch.isfinite(rewards).all():
        raise ValueError("rewards contain NaN or inf; fix the reward function first")
    role_stats = _role_stats(rewards, roles)  # (mean, std) of each role's rewards, once
    advantages = torch.zeros_like(rewards)
    for (_, role), indices in group_indices(task_types, roles).items():
        if len(indices) < 2:
            continue  # singleton: no baseline but itself, advantage stays 0
        index = torch.tensor(indices, device=rewards.device)
        group = rewards[index]  # (G,)
        baseline, std = group.mean(), group.std(unbiased=False)
        if flat == "step" and std < eps:  # flat: the step's baseline (and spread) instead
            baseline, role_std = role_stats[role]
            std = role_std if scale != "none" else None
        elif scale != "group":
            std = role_stats[role][1] if scale == "batch" else None
        centred = group - baseline
        if std is not None and std >= eps:
            centred = centred / std
        advantages[index] = centred
    return advantages


def _role_stats(rewards: torch.Tensor, roles: Sequence[Hashable]
                ) -> dict[Hashable, tuple[torch.Tensor, torch.Tensor]]:
    """The mean and population standard deviation of each role's rewards in the step."""
    stats = {}
    for role in dict.fromkeys(roles):
        mine = rewards[torch.tensor([i for i, r in enumerate(roles) if r == role],
                                    device=rewards.device)]
        stats[role] = (mine.mean(), mine.std(unbiased=False))
    return stats


@register_adv_est("task_relative")
def centred_advantages(rewards: torch.Tensor, groups: Sequence[Hashable],
                       roles: Sequence[Hashable], *, eps: float, scale: str = "auto",
                       flat: str = "zero") -> torch.Tensor:
    """TR-RPG's estimator: ``task_relative_advantages``, in reward units when ``scale="auto"``.

    Every registered estimator takes these arguments (``scale`` may be ``auto``, the
    estimator's own) and returns advantages ``(B,)``.
    """
    scale = "none" if scale == "auto" else scale
    return task_relative_advantages(rewards, groups, roles, scale=scale, eps=eps, flat=flat)


@register_adv_est("task_relative_whitened")
def whitened_advantages(rewards: torch.Tensor, groups: Sequence[Hashable],
                        roles: Sequence[Hashable], *, eps: float, scale: str = "auto",
                        flat: str = "zero") -> torch.Tensor:
    """TRR++'s (and GRPO's) estimator: divided by each group's std when ``scale="auto"``."""
    scale = "group" if scale == "auto" else scale
    return task_relative_advantages(rewards, groups, roles, scale=scale, eps=eps, flat=flat)


ADVANTAGE_BASELINES = ("task_type", "task")  # train.advantage_baseline


def baseline_group(task_type: str, task_index: int | None, baseline: str) -> Hashable:
    """The key of the samples that share a sample's baseline (the role is keyed separately).

    Args:
        task_type: the sample's task type.
        task_index: the index of the task within the step for solve samples (``None`` for
            roles whose samples do not share a prompt).
        baseline: ``task_type`` or ``task`` (design: docs/design/rl.md#advantages).

    >>> baseline_group("math", 3, "task_type"), baseline_group("math", 3, "task")
    ('math', ('math', 3))
    >>> baseline_group("code_o", None, "task")
    'code_o'
    """
    if baseline not in ADVANTAGE_BASELINES:
        raise ValueError(f"baseline must be one of {ADVANTAGE_BASELINES}, got {baseline!r}")
    if baseline == "task" and task_index is not None:
        return (task_type, task_index)
    return task_type


def group_indices(task_types: Sequence[Hashable], roles: Sequence[Hashable]
                  ) -> dict[tuple[Hashable, Hashable], list[int]]:
    """Sample indices of each (task type, role) group, in first-seen order.

    >>> group_indices(["a", "b", "a"], ["solve", "solve", "solve"])
    {('a', 'solve'): [0, 2], ('b', 'solve'): [1]}
    """
    groups: dict[tuple[Hashable, Hashable], list[int]] = {}
    for index, key in enumerate(zip(task_types, roles, strict=True)):
        groups.setdefault(key, []).append(index)
    return groups


def place_on_last_token(values: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """Scatter one value per sequence onto its last response token; zeros elsewhere.

    Args:
        values: sequence-level values, shape ``(B,)``.
        response_mask: 1 on response tokens, shape ``(B, T)``; every row needs one.

    Returns:
        Token-level tensor, shape ``(B, T)``.

    >>> place_on_last_token(torch.tensor([-0.5]), torch.tensor([[1, 1, 1, 0]]))
    tensor([[ 0.0000,  0.0000, -0.5000,  0.0000]])
    """
    mask = response_mask.bool()  # (B, T)
    if not mask.any(dim=1).all():
        raise ValueError("every sequence needs at least one response token")
    positions = torch.arange(mask.shape[1], device=mask.device).expand_as(mask)  # (B, T)
    last = torch.where(mask, positions, -1).max(dim=1).values  # (B,)
    token_values = torch.zeros(mask.shape, dtype=values.dtype, device=values.device)
    token_values[torch.arange(mask.shape[0], device=mask.device), last] = values
    return token_values
