"""Encode a prompt once however many samples it gets: a shared KV cache of the distinct prompts.

A group holds each prompt ``G`` times; prefilling the distinct ones and gathering their cache
gives the same generation and log-probs up to float rounding, at one prompt's cost.

Design: docs/design/inference.md#shared_prefill.
"""

from __future__ import annotations

import inspect
from collections.abc import Hashable, Sequence
from typing import Any

import torch

CACHE_ARGUMENTS = ("cache", "past_key_values")  # transformers 5's name, then 4's


def distinct_rows(keys: Sequence[Hashable]) -> tuple[list[int], list[int]]:
    """``(first row of each distinct key, each row's distinct-key number)``, in first-seen order.

    >>> distinct_rows(["a", "a", "b", "a"])
    ([0, 2], [0, 0, 1, 0])
    """
    numbers: dict[Hashable, int] = {}
    firsts: list[int] = []
    for row, key in enumerate(keys):
        if key not in numbers:
            numbers[key] = len(firsts)
            firsts.append(row)
    return firsts, [numbers[key] for key in keys]


def base_model(model: Any) -> Any:
    """The transformers model inside DDP (``module``) and PEFT (``get_base_model``) wrappers."""
    model = getattr(model, "module", model)
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def forward_parameters(model: Any) -> Sequence[str]:
    """The keyword names the transformers model's ``forward`` takes."""
    return tuple(inspect.signature(type(base_model(model)).forward).parameters)


def cache_argument(model: Any) -> str | None:
    """The forward's KV-cache keyword (``cache`` or ``past_key_values``); ``None``: no cache."""
    if getattr(getattr(base_model(model), "config", None), "is_encoder_decoder", False):
        return None
    parameters = forward_parameters(model)
    return next((name for name in CACHE_ARGUMENTS if name in parameters), None)


def mask_positions(attention_mask: torch.Tensor) -> torch.Tensor:
    """Position ids of left-padded rows as ``generate`` makes them: ``cumsum − 1``, pads at 0."""
    return (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)


def prefix_cache(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                 position_ids: torch.Tensor, rows: Sequence[int]) -> dict[str, Any]:
    """``{cache keyword: KV cache}`` of ``input_ids`` ``(U, W)``, row ``r`` holding ``rows[r]``'s.

    ``{}`` where the model cannot (docs/design/inference.md#shared_prefill). Runs in the
    caller's grad mode: under autograd the gather is differentiable, so a loss on the rows
    sends each prefix the sum of its rows' gradients.
    """
    name = cache_argument(model)
    if name is None or input_ids.shape[1] == 0:
        return {}
    keep = {"logits_to_keep": 1} if "logits_to_keep" in forward_parameters(model) else {}
    output = model(input_ids=input_ids, attention_mask=attention_mask,
                   position_ids=position_ids, use_cache=True, **keep)
    cache = next((getattr(output, key, None) for key in CACHE_ARGUMENTS
                  if getattr(output, key, None) is not None), None)
    if cache is None or not hasattr(cache, "reorder_cache"):
        return {}
    cache.reorder_cache(torch.tensor(rows, device=input_ids.device))
    return {name: cache}


def shared_prefill(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                   prompts: Sequence[Sequence[int]]) -> dict[str, Any]:
    """``generate`` keywords that reuse one prefill per distinct prompt; ``{}``: nothing shared.

    Args:
        model: the causal LM about to ``generate``.
        input_ids: ``(B, P)`` left-padded prompts, the rows of ``prompts``.
        attention_mask: ``(B, P)``, 0 on the padding.
        prompts: each row's prompt ids (rows with equal ids share a prefill).
    """
    firsts, rows = distinct_rows([tuple(prompt) for prompt in prompts])
    generation_config = getattr(model, "generation_config", None)
    if (len(firsts) == len(prompts) or input_ids.shape[1] < 2
            or getattr(generation_config, "cache_implementation", None)):
        return {}
    distinct = torch.tensor(firsts, device=input_ids.device)
    ids = input_ids[distinct, :-1]  # (U, P-1)
    mask = attention_mask[distinct, :-1]  # (U, P-1)
    return prefix_cache(model, ids, mask, mask_positions(mask), rows)
