"""Rollout records and the padded training batch built from them.

``Rollout`` (one sampled response) → ``RolloutGroup`` (one example's responses, the unit of a
baseline) → ``RolloutBatch`` → ``TrainingBatch`` of right-padded ``(B, T)`` tensors indexed by
token position.

Design: docs/design/inference.md#rollouts.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields

import numpy as np
import torch

from crsp_ops.inference.completions import LogprobSemantics

_SEMANTICS = ("raw", "processed", "none")
_LOGPROB_SLACK = 1e-4  # float32 log_softmax of a near-certain token can round a hair above 0


def _frozen_array(values: object, dtype: type, name: str) -> np.ndarray:
    array = np.array(values, dtype=dtype)  # a copy: later edits to the source cannot leak in
    if array.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got shape {array.shape}")
    array.flags.writeable = False
    return array


@dataclass(frozen=True, eq=False)
class Rollout:
    """One sampled response to one prompt, with what the trainer needs to learn from it."""

    env_name: str  # environment / task family that produced the prompt
    env_example_id: str  # example id within that environment
    prompt_tokens: np.ndarray  # (P,) int32, chat template applied: exactly what the model saw
    response_tokens: np.ndarray  # (R,) int32, including a final EOS/end-of-turn if generated
    response_logprobs: np.ndarray  # (R,) float32 logprob of each response token
    token_rewards: np.ndarray  # (R,) float32 per-token reward
    episode_reward: float  # scalar reward of the whole response
    logprob_semantics: LogprobSemantics  # raw policy, processed (steered), or none (zeros)

    def __post_init__(self) -> None:
        set_field = object.__setattr__  # frozen: coerce once, here
        for name, dtype in (
            ("prompt_tokens", np.int32),
            ("response_tokens", np.int32),
            ("response_logprobs", np.float32),
            ("token_rewards", np.float32),
        ):
            set_field(self, name, _frozen_array(getattr(self, name), dtype, name))
        set_field(self, "episode_reward", float(self.episode_reward))
        where = f"rollout {self.env_name}/{self.env_example_id}"
        if len(self.prompt_tokens) == 0:
            raise ValueError(f"{where}: empty prompt_tokens")
        if len(self.response_tokens) == 0:
            raise ValueError(f"{where}: empty response_tokens")
        length = len(self.response_tokens)
        for name in ("response_logprobs", "token_rewards"):
            if len(getattr(self, name)) != length:
                raise ValueError(
                    f"{where}: {len(getattr(self, name))} {name} for {length} response tokens"
                )
        if (self.prompt_tokens < 0).any() or (self.response_tokens < 0).any():
            raise ValueError(f"{where}: negative token ids")
        if self.logprob_semantics not in _SEMANTICS:
            raise ValueError(f"{where}: logprob_semantics must be one of {_SEMANTICS}")
        self._check_logprobs(where)
        if not (math.isfinite(self.episode_reward) and np.isfinite(self.token_rewards).all()):
            raise ValueError(f"{where}: rewards must be finite")

    def _check_logprobs(self, where: str) -> None:
        logprobs = self.response_logprobs
        if self.logprob_semantics == "none":
            if logprobs.any():
                raise ValueError(f"{where}: logprob_semantics 'none' needs all-zero logprobs")
            return
        if np.isnan(logprobs).any() or (logprobs > _LOGPROB_SLACK).any():
            raise ValueError(
                f"{where}: response_logprobs must be log-probabilities (<= 0, not NaN); "
                "were logits passed instead?"
            )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Rollout):
            return NotImplemented
        return all(
            np.array_equal(getattr(self, f.name), getattr(other, f.name))
            if isinstance(getattr(self, f.name), np.ndarray)
            else getattr(self, f.name) == getattr(other, f.name)
            for f in fields(self)
        )

    __hash__ = None  # arrays are not hashable

    @property
    def length(self) -> int:
        """Prompt plus response tokens."""
        return len(self.prompt_tokens) + len(self.response_tokens)


@dataclass(frozen=True)
class RolloutGroup:
    """Several responses to the same example (the unit a task-relative baseline averages over)."""

    rollouts: tuple[Rollout, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "rollouts", tuple(self.rollouts))
        if not self.rollouts:
            raise ValueError("a RolloutGroup needs at least one rollout")
        keys = {(r.env_name, r.env_example_id) for r in self.rollouts}
        if len(keys) != 1:
            raise ValueError(f"a RolloutGroup holds responses to one example, got {sorted(keys)}")

    def __len__(self) -> int:
        return len(self.rollouts)

    def __iter__(self) -> Iterator[Rollout]:
        return iter(self.rollouts)

    @property
    def episode_rewards(self) -> np.ndarray:
        """(G,) float32 episode reward of each rollout."""
        return np.array([r.episode_reward for r in self.rollouts], dtype=np.float32)


@dataclass(frozen=True)
class RolloutBatch:
    """The groups one trainer step learns from, and the policy version that sampled them."""

    groups: tuple[RolloutGroup, ...]
    policy_step: int = 0  # trainer step of the weights that generated these rollouts

    def __post_init__(self) -> None:
        object.__setattr__(self, "groups", tuple(self.groups))
        if not self.groups:
            raise ValueError("a RolloutBatch needs at least one group")
        semantics = {r.logprob_semantics for r in self.rollouts}
        if len(semantics) != 1:
            # mixing distributions would make one importance ratio mean two things
            raise ValueError(f"rollouts in one batch carry mixed logprob semantics {semantics}")

    @property
    def rollouts(self) -> list[Rollout]:
        """All rollouts, group by group."""
        return [rollout for group in self.groups for rollout in group]

    def __len__(self) -> int:
        return sum(len(group) for group in self.groups)


@dataclass(frozen=True)
class TrainingBatch:
    """Padded tensors for one policy-gradient step; ``B`` rollouts, ``T`` positions (see module)."""

    input_ids: torch.Tensor  # (B, T) int64, prompt then response, right-padded with pad_token_id
    attention_mask: torch.Tensor  # (B, T) int64, 1 on prompt and response tokens
    loss_mask: torch.Tensor  # (B, T) float32, 1 on response tokens only
    old_logprobs: torch.Tensor  # (B, T) float32, sampler's logprob of input_ids[b, t]; 0 elsewhere
    token_rewards: torch.Tensor  # (B, T) float32, per-token reward on response tokens; 0 elsewhere
    episode_rewards: torch.Tensor  # (B,) float32
    group_index: torch.Tensor  # (B,) int64, which RolloutGroup each row came from
    prompt_lengths: torch.Tensor  # (B,) int64
    response_lengths: torch.Tensor  # (B,) int64
    logprob_semantics: LogprobSemantics  # what old_logprobs mean (shared by every row)

    def __post_init__(self) -> None:
        batch, width = self.input_ids.shape
        for name in ("attention_mask", "loss_mask", "old_logprobs", "token_rewards"):
            if tuple(getattr(self, name).shape) != (batch, width):
                raise ValueError(f"{name} has shape {tuple(getattr(self, name).shape)}, "
                                 f"expected {(batch, width)}")
        for name in ("episode_rewards", "group_index", "prompt_lengths", "response_lengths"):
            if tuple(getattr(self, name).shape) != (batch,):
                raise ValueError(f"{name} has shape {tuple(getattr(self, name).shape)}, "
                                 f"expected {(batch,)}")

    @classmethod
    def from_rollouts(
        cls,
        batch: RolloutBatch | Sequence[Rollout],
        pad_token_id: int,
        max_length: int | None = None,
    ) -> TrainingBatch:
        """Right-pad every ``prompt + response`` into one ``(B, T)`` batch.

        Args:
            batch: a RolloutBatch (rows keep group order) or a plain rollout list (one group
                per rollout).
            pad_token_id: filler id for padding positions (masked out everywhere).
            max_length: pad to exactly this width; a longer rollout raises instead of being
                silently truncated. ``None`` pads to the longest rollout.
        """
        if isinstance(batch, RolloutBatch):
            rows = [(index, r) for index, group in enumerate(batch.groups) for r in group]
        else:
            rows = list(enumerate(batch))
            if not rows:
                raise ValueError("cannot build a TrainingBatch from zero rollouts")
            RolloutBatch(tuple(RolloutGroup((r,)) for _, r in rows))  # same validation
        longest = max(r.length for _, r in rows)
        width = longest if max_length is None else max_length
        if longest > width:
            too_long = next(r for _, r in rows if r.length > width)
            raise ValueError(
                f"rollout {too_long.env_name}/{too_long.env_example_id} has {too_long.length} "
                f"tokens, more than max_length={width}"
            )
        size = len(rows)
        input_ids = torch.full((size, width), pad_token_id, dtype=torch.int64)  # (B, T)
        attention_mask = torch.zeros((size, width), dtype=torch.int64)  # (B, T)
        loss_mask = torch.zeros((size, width), dtype=torch.float32)  # (B, T)
        old_logprobs = torch.zeros((size, width), dtype=torch.float32)  # (B, T)
        token_rewards = torch.zeros((size, width), dtype=torch.float32)  # (B, T)
        for row, (_, rollout) in enumerate(rows):
            prompt, response = len(rollout.prompt_tokens), len(rollout.response_tokens)
            end = prompt + response
            input_ids[row, :prompt] = torch.from_numpy(rollout.prompt_tokens.astype(np.int64))
            input_ids[row, prompt:end] = torch.from_numpy(rollout.response_tokens.astype(np.int64))
            attention_mask[row, :end] = 1
            loss_mask[row, prompt:end] = 1.0
            old_logprobs[row, prompt:end] = torch.from_numpy(rollout.response_logprobs.copy())
            token_rewards[row, prompt:end] = torch.from_numpy(rollout.token_rewards.copy())
        return cls(
            input_ids=input_ids,
            attention_mask=attention_mask,
            loss_mask=loss_mask,
            old_logprobs=old_logprobs,
            token_rewards=token_rewards,
            episode_rewards=torch.tensor([r.episode_reward for _, r in rows], dtype=torch.float32),
            group_index=torch.tensor([index for index, _ in rows], dtype=torch.int64),
            prompt_lengths=torch.tensor([len(r.prompt_tokens) for _, r in rows]),
            response_lengths=torch.tensor([len(r.response_tokens) for _, r in rows]),
            logprob_semantics=rows[0][1].logprob_semantics,
        )
