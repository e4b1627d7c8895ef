"""CRSP reward formulas: critique, length, learnability and the format rule.

Pure functions of plain numbers, bounded where the seed is silent; the solver's alpha-weighted
reward is a ``RewardSet`` in ``rewards.solve``.

Design: docs/design/trainer.md#formulas.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

MALFORMED_REWARD = -1.0
WRONG_REWARD = -0.5


def _check_unit(name: str, value: float) -> None:
    if not (math.isfinite(value) and 0.0 <= value <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {value}")


def length_reward(num_tokens: int, *, max_length: int, penalty_threshold: int) -> float:
    """Score a response length: 1 up to ``max_length``, linear decay to 0 at the threshold.

    Args:
        num_tokens: response length in tokens (>= 0).
        max_length: longest length with full reward (> 0).
        penalty_threshold: length at and beyond which the reward is 0 (>= ``max_length``).

    Returns:
        A reward in [0, 1], non-increasing in ``num_tokens``.

    >>> length_reward(100, max_length=2048, penalty_threshold=4096)
    1.0
    >>> length_reward(3072, max_length=2048, penalty_threshold=4096)
    0.5
    >>> length_reward(5000, max_length=2048, penalty_threshold=4096)
    0.0
    """
    if not 0 < max_length <= penalty_threshold:
        raise ValueError(
            f"need 0 < max_length <= penalty_threshold, got max_length={max_length}, "
            f"penalty_threshold={penalty_threshold}; raise penalty_threshold or lower max_length"
        )
    if num_tokens < 0:
        raise ValueError(f"num_tokens must be >= 0, got {num_tokens}")
    if num_tokens <= max_length:
        return 1.0
    if num_tokens >= penalty_threshold:
        return 0.0
    return (penalty_threshold - num_tokens) / (penalty_threshold - max_length)


def critique_reward(agreement: float, creativity: float, alpha_c: float) -> float:
    """``r_critique = alpha_c·agreement + (1 − alpha_c)·creativity``.

    Args:
        agreement: 1.0 if the critique's verdict matches the executor's truth, else 0.0.
        creativity: thinking-effort grade of the critique's own reasoning, in [0, 1].
        alpha_c: weight of agreement, in [0, 1].

    Returns:
        The critique's role reward, in [0, 1].

    >>> critique_reward(1.0, 0.5, 0.6)
    0.8
    """
    for name, value in (("agreement", agreement), ("creativity", creativity),
                        ("alpha_c", alpha_c)):
        _check_unit(name, value)
    return alpha_c * agreement + (1.0 - alpha_c) * creativity


def learnability_reward(num_correct: int, num_samples: int) -> float:
    """Proposer reward: ``1 − solve_rate`` when ``0 < solve_rate < 1``, else 0.

    Tasks the solver always or never solves teach nothing, so they earn nothing.

    Args:
        num_correct: solver samples that solved the task.
        num_samples: solver samples drawn (>= 1).

    Returns:
        A reward in [0, 1).

    >>> learnability_reward(1, 4)
    0.75
    >>> learnability_reward(4, 4)
    0.0
    """
    if num_samples < 1:
        raise ValueError(f"num_samples must be >= 1, got {num_samples}")
    if not 0 <= num_correct <= num_samples:
        raise ValueError(f"num_correct must be in [0, {num_samples}], got {num_correct}")
    if num_correct in (0, num_samples):
        return 0.0
    return 1.0 - num_correct / num_samples


def format_rule_reward(*, well_formed: bool, passed: bool, role_reward: float) -> float:
    """Apply the format rule: −1 if malformed, −0.5 if well-formed but failed, else the role reward.

    Args:
        well_formed: the response follows the role's output format.
        passed: the response is right (solver), agrees with the truth (critique) or is a valid
            task (proposer).
        role_reward: the role's reward, used only when well-formed and passed.

    Returns:
        The sequence-level reward.

    >>> format_rule_reward(well_formed=False, passed=True, role_reward=0.9)
    -1.0
    >>> format_rule_reward(well_formed=True, passed=False, role_reward=0.9)
    -0.5
    """
    if not well_formed:
        return MALFORMED_REWARD
    if not passed:
        return WRONG_REWARD
    return role_reward


def last_token_rewards(response_length: int, reward: float) -> list[float]:
    """A sequence reward as a per-token vector: ``reward`` on the last token, 0 elsewhere.

    >>> last_token_rewards(3, 0.75)
    [0.0, 0.0, 0.75]
    """
    if response_length < 1:
        raise ValueError(f"response_length must be >= 1, got {response_length}")
    rewards = [0.0] * response_length
    rewards[-1] = reward
    return rewards


@dataclass(frozen=True)
class CreativityEvaluation:
    """A parsed thinking-effort grade (see ``critique.parse_grade``)."""

    grade: float  # overall effort grade, clamped to [0, 1]
    rationale: str  # the grader's explanation ("" when missing)
    source: str  # "fenced" | "bare" | "fallback" | "none" (nothing parseable: neutral grade)
    # Optional per-dimension grades the grader chose to give, clamped to [0, 1].
    dimensions: Mapping[str, float] = field(default_factory=dict)

    @property
    def format_ok(self) -> bool:
        """False when the grade could not be parsed and the neutral grade was used."""
        return self.source != "none"
