"""Scored role samples → validated rollouts, always through the InferenceContext.

Each backend completion goes straight to ``InferenceContext.create_rollout_from_completion``,
which tokenizes the prompt with the chat template, checks it against the ids the engine used,
and takes the response ids with their logprobs as the engine returned them (no round trip
through an OpenAI-shaped dict). The sequence reward sits on the last response token (the format
rule's placement, for every role and for a dataset's summed rewards).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from crsp_ops.crsp.rewards.formulas import last_token_rewards
from crsp_ops.crsp.rl.advantages import baseline_group
from crsp_ops.crsp.rl.update import mask_rows, truncated_rows
from crsp_ops.crsp.selfplay.episode import RoleSample
from crsp_ops.inference.context import InferenceContext
from crsp_ops.inference.rollouts import Rollout, TrainingBatch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepRollouts:
    """The rollouts of one step with the role and baseline group of each (same order)."""

    rollouts: tuple[Rollout, ...]
    roles: tuple[str, ...]
    baseline_groups: tuple[Hashable, ...]  # advantages.baseline_group of each rollout
    skipped: int  # samples that could not become rollouts (empty response, misalignment)


def build_rollouts(samples: Sequence[RoleSample], context: InferenceContext, *,
                   baseline: str = "task_type") -> StepRollouts:
    """One rollout per sample; samples the context rejects are logged, counted and skipped.

    ``baseline`` (``train.advantage_baseline``) picks each rollout's baseline group.
    """
    rollouts, roles, groups, skipped = [], [], [], 0
    for sample in samples:
        completion = sample.completion
        try:
            token_rewards = last_token_rewards(completion.response_tokens, sample.reward)
            rollout = context.create_rollout_from_completion(
                list(sample.messages), completion,
                env_name=f"{sample.role}/{sample.task_type}", env_example_id=sample.example_id,
                reward=sample.reward, token_rewards=token_rewards)
        except ValueError as error:
            skipped += 1
            logger.warning("skipping %s: %s", sample.example_id, error)
            continue
        rollouts.append(rollout)
        roles.append(sample.role)
        task_index = sample.info.get("task_index") if sample.role == "solve" else None
        groups.append(baseline_group(sample.task_type, task_index, baseline))
    return StepRollouts(tuple(rollouts), tuple(roles), tuple(groups), skipped)


def training_batch(samples: Sequence[RoleSample], context: InferenceContext, *, baseline: str,
                   pad_id: int, mask_truncated: bool
                   ) -> tuple[StepRollouts, TrainingBatch | None, dict[str, float]]:
    """A step's rollouts, their padded batch (``None`` without any) and the rollout counts.

    With ``mask_truncated`` the rows whose completion hit its token budget keep their reward
    in the advantage baseline but train nothing.
    """
    step = build_rollouts(samples, context, baseline=baseline)
    context_stats = {f"context/{k}": float(v) for k, v in context.stats().items()}
    context.reset_stats()
    truncated = truncated_rows(samples, [(r.env_name, r.env_example_id) for r in step.rollouts])
    counts = {"rollouts/count": float(len(step.rollouts)),
              "rollouts/skipped": float(step.skipped), **context_stats,
              "rollouts/truncated": float(len(truncated))}
    batch = None
    if step.rollouts:
        batch = TrainingBatch.from_rollouts(step.rollouts, pad_token_id=pad_id)
        if mask_truncated:
            batch = mask_rows(batch, truncated)
    return step, batch, counts
