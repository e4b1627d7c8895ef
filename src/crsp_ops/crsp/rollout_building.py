"""Scored role samples → validated rollouts, always through the InferenceContext.

Each completion is rendered as an OpenAI-shaped choice (``completion_to_choice``) and handed
to ``InferenceContext.create_rollout_from_choice``, which tokenizes the prompt with the chat
template, checks it against the ids the engine used, and lines response ids up with their
logprobs. The sequence reward sits on the last response token (the format rule's placement).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from crsp_ops.crsp.episode import RoleSample
from crsp_ops.crsp.rewards import format_rule_token_rewards
from crsp_ops.inference.context import InferenceContext
from crsp_ops.inference.rollouts import Rollout
from crsp_ops.inference.transformers_backend import completion_to_choice

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepRollouts:
    """The rollouts of one step with the role and task type of each (same order)."""

    rollouts: tuple[Rollout, ...]
    roles: tuple[str, ...]
    task_types: tuple[str, ...]
    skipped: int  # samples that could not become rollouts (empty response, misalignment)


def build_rollouts(samples: Sequence[RoleSample], context: InferenceContext,
                   tokenizer: Any) -> StepRollouts:
    """One rollout per sample; samples the context rejects are logged, counted and skipped."""
    rollouts, roles, task_types, skipped = [], [], [], 0
    for sample in samples:
        completion = sample.completion
        try:
            token_rewards = format_rule_token_rewards(
                completion.response_tokens, well_formed=sample.well_formed,
                passed=sample.passed, role_reward=sample.role_reward)
            rollout = context.create_rollout_from_choice(
                list(sample.messages), completion_to_choice(completion, tokenizer),
                env_name=f"{sample.role}/{sample.task_type}", env_example_id=sample.example_id,
                reward=sample.reward, token_rewards=token_rewards)
        except ValueError as error:
            skipped += 1
            logger.warning("skipping %s: %s", sample.example_id, error)
            continue
        rollouts.append(rollout)
        roles.append(sample.role)
        task_types.append(sample.task_type)
    return StepRollouts(tuple(rollouts), tuple(roles), tuple(task_types), skipped)
