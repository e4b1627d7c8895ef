"""Policy log-probs of rows that share prompts, each distinct prompt encoded once, with gradient.

A step holds each prompt ``G`` times; encoding it once and gathering its KV cache to the rows
gives the same log-probs and gradient as the plain forward, up to float rounding.

Design: docs/design/rl.md#shared_prefix.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from crsp_ops.crsp.rl.token_logprobs import gathered_logprobs, token_entropies
from crsp_ops.inference.rollouts import TrainingBatch
from crsp_ops.inference.shared_prefill import (
    base_model,
    distinct_rows,
    mask_positions,
    prefix_cache,
)


@dataclass(frozen=True)
class PrefixPlan:
    """The two forwards of a micro-batch ``(b, t)`` with ``U`` distinct prompts.

    ``prefix_ids``/``prefix_mask`` ``(U, W)``: each distinct prompt but its last token, left
    padded; ``rows`` ``(b,)``: each row's distinct prompt; ``columns`` ``(b, S)``: the
    micro-batch columns each row's second forward reads (its last prompt token, then its
    answer); ``valid`` ``(b, S)``: which of those lie inside the row.
    """

    prefix_ids: torch.Tensor
    prefix_mask: torch.Tensor
    rows: list[int]
    columns: torch.Tensor
    valid: torch.Tensor


def prompt_keys(model: Any, batch: TrainingBatch, *, lockstep: bool
                ) -> list[tuple[int, ...]] | None:
    """Each row's prompt ids where rows may share their encoding, else ``None``.

    Sharing needs unsharded weights (``lockstep``: FSDP gathers them per forward, and ranks
    must run their passes in step) and a model that keeps its cache in training (activation
    checkpointing turns it off). Under DDP it works: the prompt's forward goes through the
    unwrapped module, and each parameter's gradient still reaches DDP's hook once per
    backward.
    """
    if lockstep or getattr(base_model(model), "is_gradient_checkpointing", False):
        return None
    lengths = batch.prompt_lengths.tolist()
    return [tuple(batch.input_ids[row, :length].tolist()) for row, length in enumerate(lengths)]


def prefix_plan(keys: Sequence[Hashable], input_ids: torch.Tensor, prompt_lengths: Sequence[int],
                lengths: Sequence[int]) -> PrefixPlan | None:
    """The plan of right-padded rows ``input_ids`` ``(b, t)``; ``None`` when no prompt repeats.

    Args:
        keys: each row's prompt identity (its prompt ids, say): equal keys share a prefix.
        input_ids: the rows, prompt then answer, on the host.
        prompt_lengths: each row's prompt tokens (>= 2 for a row to share).
        lengths: each row's tokens, prompt and answer.
    """
    firsts, rows = distinct_rows(keys)
    if len(firsts) == len(keys) or min(prompt_lengths) < 2:
        return None
    width = max(prompt_lengths[first] - 1 for first in firsts)
    prefix_ids = input_ids.new_zeros((len(firsts), width))  # (U, W)
    prefix_mask = torch.zeros((len(firsts), width), dtype=torch.long)  # (U, W)
    for number, first in enumerate(firsts):
        size = prompt_lengths[first] - 1
        prefix_ids[number, width - size:] = input_ids[first, :size]
        prefix_mask[number, width - size:] = 1
    starts = torch.tensor([length - 1 for length in prompt_lengths])  # (b,)
    span = max(total - start for total, start in zip(lengths, starts.tolist(), strict=True))
    columns = starts[:, None] + torch.arange(span)  # (b, S)
    valid = columns < torch.tensor(list(lengths))[:, None]  # (b, S)
    return PrefixPlan(prefix_ids, prefix_mask, rows, columns, valid)


def group_plan(batch: TrainingBatch, keys: Sequence[Hashable], group: Sequence[int]
               ) -> PrefixPlan | None:
    """``prefix_plan`` of the micro-batch ``group`` (row indices) of ``batch``."""
    rows = list(group)
    return prefix_plan([keys[row] for row in rows], batch.input_ids[rows],
                       batch.prompt_lengths[rows].tolist(),
                       batch.attention_mask[rows].sum(1).tolist())


def shared_prefix_scores(model: Any, plan: PrefixPlan, input_ids: torch.Tensor,
                         temperature: float, *, entropy: bool = False
                         ) -> tuple[torch.Tensor, torch.Tensor | None] | None:
    """``log π(input_ids[r, c] | ...)`` at every answer column ``c``, 0 elsewhere, ``(b, t)``.

    Matches ``token_logprobs.token_scores`` on the answer columns, entropies included (when
    ``entropy``; else ``None``). ``None`` when the model gives no cache to share (the caller
    then runs the plain forward).
    """
    device = input_ids.device
    batch, width = input_ids.shape
    prefix_mask = plan.prefix_mask.to(device)
    # DDP: the prompt through the bare module (DDP prepares one backward per forward call)
    cache = prefix_cache(getattr(model, "module", model), plan.prefix_ids.to(device), prefix_mask,
                         mask_positions(prefix_mask), plan.rows)
    if not cache:
        return None
    columns, valid = plan.columns.to(device), plan.valid.to(device)
    suffix_ids = input_ids.gather(1, columns.clamp(max=width - 1))  # (b, S)
    rows = torch.tensor(plan.rows, device=device)
    attention_mask = torch.cat([prefix_mask[rows], valid.long()], dim=1)  # (b, W + S)
    logits = model(input_ids=suffix_ids, attention_mask=attention_mask, position_ids=columns,
                   use_cache=True, **cache).logits  # (b, S, V)
    chosen = gathered_logprobs(logits[:, :-1], suffix_ids[:, 1:], temperature=temperature)
    targets = torch.where(valid[:, 1:], columns[:, 1:], width)  # (b, S-1); width: dropped

    def place(values: torch.Tensor) -> torch.Tensor:  # (b, S-1) -> (b, t)
        return values.new_zeros((batch, width + 1)).scatter(1, targets, values)[:, :width]

    entropies = None
    if entropy:
        entropies = place(token_entropies(logits[:, :-1], temperature=temperature))
    return place(chosen), entropies


def shared_prefix_logprobs(model: Any, plan: PrefixPlan, input_ids: torch.Tensor,
                           temperature: float) -> torch.Tensor | None:
    """The log-probs of ``shared_prefix_scores`` (``None`` as there)."""
    scores = shared_prefix_scores(model, plan, input_ids, temperature)
    return None if scores is None else scores[0]
