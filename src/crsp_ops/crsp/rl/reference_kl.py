"""A KL penalty to the *initial* policy (TRL's ``beta``), beside TR-RPG's KL to the sampler.

``k1`` or ``k3`` (Schulman's, GRPO's choice) per response token; the reference is the model
with its LoRA adapter disabled, or a frozen copy of the initial weights.

Design: docs/design/rl.md#reference_kl.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch

ESTIMATORS = ("k1", "k3")


def kl_estimate(logp: torch.Tensor, ref_logp: torch.Tensor, estimator: str) -> torch.Tensor:
    """Per-token estimate of ``KL(π ‖ π_ref)`` (same shape as ``logp``); see the docstring.

    >>> kl_estimate(torch.tensor([-1.0]), torch.tensor([-2.0]), "k3")  # e^-1 + 1 - 1
    tensor([0.3679])
    """
    if estimator not in ESTIMATORS:
        raise ValueError(f"unknown KL estimator {estimator!r}; choose one of {list(ESTIMATORS)}")
    delta = ref_logp.detach() - logp  # (B, T)
    if estimator == "k1":
        return -delta
    return torch.exp(delta) - delta - 1


class ReferencePolicy:
    """The initial policy, for ``kl_estimate``'s ``ref_logp``.

    Args:
        model: the policy before its first update: a peft model (the adapter is switched off
            for the reference) or a plain model (deep-copied and frozen here).
    """

    def __init__(self, model: Any) -> None:
        self.shares_weights = hasattr(model, "disable_adapter")
        if self.shares_weights:
            self.model = model
        else:
            self.model = copy.deepcopy(model).eval()
            self.model.requires_grad_(False)

    def to(self, device: Any) -> ReferencePolicy:
        """Move a frozen copy to ``device`` (a shared model stays where the trainer put it)."""
        if not self.shares_weights:
            self.model.to(device)
        return self

    @contextmanager
    def active(self) -> Iterator[Any]:
        """The reference model to call under ``torch.no_grad()``."""
        if self.shares_weights:
            with self.model.disable_adapter():
                yield self.model
        else:
            yield self.model

    def parameters_in_memory(self) -> int:
        """Extra parameters the reference holds (0 when it shares the policy's weights)."""
        return 0 if self.shares_weights else sum(p.numel() for p in self.model.parameters())
