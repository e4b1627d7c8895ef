"""The transformers logits processors that realise ``SamplingParams``, in one order.

The in-process backend and the local server's ``top_logprobs`` build their chain here, so both
see the same distribution.

Design: docs/design/inference.md#sampling_processors.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import (
    MinPLogitsWarper,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from crsp_ops.inference.completions import SamplingParams


def penalty_processors(params: SamplingParams,
                       padding: torch.Tensor | None = None) -> list[Any]:
    """The repetition penalty as a processor list ([] when off).

    Args:
        params: the batch's sampling parameters.
        padding: (B,) left-padding width of each row: those positions are not tokens of the
            prompt and are never penalised (HF's own ``generate`` does the same).
    """
    if params.repetition_penalty == 1.0:
        return []
    return [RepetitionPenaltyLogitsProcessor(params.repetition_penalty,
                                             prompt_ignore_length=padding)]


def sampling_warpers(params: SamplingParams) -> list[Any]:
    """Temperature, top-k, top-p and min-p, those that are on ([] when greedy)."""
    if params.greedy:
        return []
    warpers: list[Any] = []
    if params.temperature != 1.0:
        warpers.append(TemperatureLogitsWarper(params.temperature))
    if params.top_k > 0:
        warpers.append(TopKLogitsWarper(params.top_k))
    if params.top_p < 1.0:
        warpers.append(TopPLogitsWarper(params.top_p))
    if params.min_p > 0.0:
        warpers.append(MinPLogitsWarper(params.min_p))
    return warpers


def config_overrides(params: SamplingParams) -> dict[str, Any]:
    """``GenerationConfig`` fields that keep the model's own copy of an enabled knob out.

    A model's ``generation_config.json`` may declare a repetition penalty or min-p; HF would
    then apply its value too (min-p after ours, outside the recorded distribution). Neutral
    values switch those off whenever ``params`` sets the knob itself; a knob left off keeps the
    model's own, as before it existed.
    """
    overrides: dict[str, Any] = {}
    if params.repetition_penalty != 1.0:
        overrides["repetition_penalty"] = 1.0
    if params.min_p > 0.0 and not params.greedy:
        overrides["min_p"] = 0.0
    return overrides
