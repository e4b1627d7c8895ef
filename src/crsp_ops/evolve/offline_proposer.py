"""A proposer that needs no LLM: per-cluster usage contrasts plus a small trust region.

Clusters over-represented in long answers go down, those in correct answers go up; around the
best deltas the step doubles after an improvement and halves after a rejection.

Design: docs/design/evolve.md#offline_proposer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from crsp_ops.evolve.iteration import Evidence, Proposal
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.token_usage import ClusterCounter, usage_contrast
from crsp_ops.steering.deltas import validate_deltas
from crsp_ops.steering.token_rules import EOS_CLUSTER

TIE_TOLERANCE = 1e-9  # composites this close count as equal (same answers, same lengths)
LENGTH_CONTRASTS = ("share", "excess")  # evolve.offline_length_contrast


def usage_direction(
    evidence: Evidence, counter: ClusterCounter, *, correct_weight: float,
    length_contrast: str = "share", eos_up_only: bool = False,
) -> np.ndarray:
    """``(K,)`` unit-max direction of change from one minibatch's answers (zeros if flat).

    ``length_contrast``: ``share`` or ``excess``; ``eos_up_only``: EOS never goes down (design:
    docs/design/evolve.md#offline_proposer).
    """
    records = list(evidence.records)
    counts = np.stack([counter.counts(record) for record in records])  # (N, K)
    contrast = usage_contrast(
        counts, [r.response_tokens for r in records], [bool(r.is_correct) for r in records]
    )
    if length_contrast not in LENGTH_CONTRASTS:
        raise ValueError(f"length_contrast must be one of {LENGTH_CONTRASTS}, "
                         f"got {length_contrast!r}")
    longer = contrast.long_excess if length_contrast == "excess" else contrast.long_minus_short
    direction = -longer + correct_weight * contrast.correct_minus_incorrect
    scale = np.abs(direction).max()
    direction = direction / scale if scale > 0 else direction
    # EOS is (nearly) absent from answer text, so its sign comes from the correctness of lengths.
    longer_helps = contrast.long_correct_rate > contrast.short_correct_rate
    direction[EOS_CLUSTER] = -1.0 if longer_helps and not eos_up_only else 1.0
    return direction


class OfflineProposer(Proposer):
    """Hill-climb the deltas along per-cluster usage contrasts (docs/design/evolve.md).

    Args:
        counter: per-cluster token counts of an answer.
        clamp: keep deltas within ``[-clamp, clamp]`` (``None``: unbounded).
        step: largest per-cluster change of the first proposal.
        grow: step factor after an improvement.
        shrink: step factor after a rejected proposal.
        correct_weight: weight of the correct-vs-incorrect contrast.
        min_step: the step never shrinks below this (the search keeps moving).
        length_contrast: ``share`` or ``excess`` (design: docs/design/evolve.md#offline_proposer).
        eos_up_only: the EOS cluster never goes down (docs/design/evolve.md#offline_proposer).
        max_step: the step never grows past this (``None``: no cap).
    """

    name = "offline"

    def __init__(
        self,
        counter: ClusterCounter,
        *,
        clamp: float | None,
        step: float,
        grow: float = 2.0,
        shrink: float = 0.5,
        correct_weight: float = 1.0,
        min_step: float = 0.05,
        length_contrast: str = "share",
        eos_up_only: bool = False,
        max_step: float | None = None,
    ) -> None:
        if step <= 0:
            raise ValueError(f"step must be > 0, got {step}")
        if length_contrast not in LENGTH_CONTRASTS:
            raise ValueError(f"length_contrast must be one of {LENGTH_CONTRASTS}, "
                             f"got {length_contrast!r}")
        self.length_contrast = length_contrast
        self.eos_up_only = eos_up_only
        self.max_step = max_step
        self.counter = counter
        self.clamp = clamp
        self.step = step
        self.grow = grow
        self.shrink = shrink
        self.correct_weight = correct_weight
        self.min_step = min_step
        self.anchor: dict[str, Any] | None = None  # {"deltas", "composite", "direction"}

    def propose(self, evidence: Evidence) -> Proposal:
        """Move from the best deltas seen along the usage direction measured there."""
        composite = evidence.scores["composite_score"]
        if self.anchor is None or evidence.improved:
            if self.anchor is not None:
                self.step = self._grown()
            direction = usage_direction(evidence, self.counter, correct_weight=self.correct_weight,
                                        length_contrast=self.length_contrast,
                                        eos_up_only=self.eos_up_only)
            self.anchor = {
                "deltas": dict(evidence.deltas), "composite": composite,
                "direction": direction.tolist(),
            }
        elif abs(composite - evidence.best_composite) <= TIE_TOLERANCE:
            self.step = self._grown()  # a flat step: go further along the same direction
        else:
            self.step = max(self.step * self.shrink, self.min_step)
        base = np.array([self.anchor["deltas"][str(i)] for i in range(len(evidence.deltas))])
        proposed = base + self.step * np.asarray(self.anchor["direction"])
        deltas = validate_deltas(
            {str(i): float(v) for i, v in enumerate(proposed)},
            n_clusters=len(evidence.deltas), clamp=self.clamp,
        )
        return Proposal(
            deltas=deltas,
            metrics={
                "offline_step": self.step,
                "offline_anchor_composite": self.anchor["composite"],
            },
        )

    def _grown(self) -> float:
        """The step after an improvement or a tie, within ``max_step``."""
        grown = self.step * self.grow
        return grown if self.max_step is None else min(grown, max(self.max_step, self.step))

    def state_dict(self) -> dict[str, Any]:
        """Step and anchor."""
        return {"step": self.step, "anchor": self.anchor}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore step and anchor."""
        self.step = float(state.get("step", self.step))
        self.anchor = state.get("anchor")
