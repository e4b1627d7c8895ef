"""Micro-batches of one update: rows grouped by length under a padded-token budget.

Rows are sorted by length and packed into micro-batches of at most ``micro_batch_size`` rows
and a padded-token budget, so activation memory is bounded whatever the rollout lengths. The
budget comes from the device: on a CPU the measured fastest size; on CUDA a share of the free
memory over what one token keeps alive for backward; elsewhere a fixed activation budget.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import torch

ACTIVATION_BUDGET = 2**23  # tokens × layers × hidden: the fallback where free memory is unknown
# On a CPU, speed sets the size, not memory: fewer, bigger micro-batches save the per-pass
# costs that scale with the parameters (gradient accumulation into every weight, the tied
# vocabulary's dense embedding gradient); much bigger ones leave the caches.
CPU_TOKEN_BUDGET = 1024
MEMORY_FRACTION = 0.5  # of the device's free memory one micro-batch's activations may take


def activation_bytes_per_token(model: Any) -> int:
    """Bytes one padded token keeps alive for backward: its activations and its logits row.

    Per layer ``16 · hidden + 4 · intermediate`` elements (a Llama block's saved tensors:
    norms, projections, rotary copies, attention output, the SwiGLU products), plus ``2 · vocab``
    (the logits and their gradient), at the parameters' element size (float32 master weights
    under autocast count 4 bytes: an over-estimate, on the safe side). 0: no config.
    """
    inner = getattr(model, "module", model)
    config = getattr(inner, "config", None)
    layers = getattr(config, "num_hidden_layers", 0)
    hidden = getattr(config, "hidden_size", 0)
    if not layers or not hidden:
        return 0
    intermediate = getattr(config, "intermediate_size", None) or 4 * hidden
    vocab = getattr(config, "vocab_size", 0) or 0
    parameter = next(inner.parameters(), None) if hasattr(inner, "parameters") else None
    element = parameter.element_size() if parameter is not None else 4
    return element * (layers * (16 * hidden + 4 * intermediate) + 2 * vocab)


def free_device_bytes(device: torch.device, gradient_bytes: int = 0) -> int | None:
    """Memory a micro-batch can use on a CUDA ``device``; ``None`` where unknown (no CUDA).

    Free memory plus what torch's allocator holds unused, minus ``gradient_bytes`` still to be
    allocated by the first backward.
    """
    if device.type != "cuda" or not torch.cuda.is_available():
        return None
    free, _ = torch.cuda.mem_get_info(device)
    cached = torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    return max(0, free + cached - gradient_bytes)


def token_budget(model: Any, activation_budget: int | None = None, *,
                 device_type: str = "cuda", free_bytes: int | None = None) -> int:
    """Padded tokens per micro-batch (a row longer than that gets a micro-batch of its own).

    * ``activation_budget``: tokens that keep ``tokens × layers × hidden`` under it;
    * on ``device_type="cpu"``: ``CPU_TOKEN_BUDGET``, the measured fastest;
    * with ``free_bytes`` (``free_device_bytes``): ``MEMORY_FRACTION`` of it over
      ``activation_bytes_per_token``: Qwen2-0.5B in float32 on 60 GiB free gets 7,223 tokens;
    * otherwise ``tokens × layers × hidden <= ACTIVATION_BUDGET``: SmolLM2-135M (30 × 576) 485.
    """
    if activation_budget is None and device_type == "cpu":
        return CPU_TOKEN_BUDGET
    per_token = activation_bytes_per_token(model)
    if activation_budget is None and free_bytes is not None and per_token:
        return max(1, int(MEMORY_FRACTION * free_bytes) // per_token)
    activation_budget = ACTIVATION_BUDGET if activation_budget is None else activation_budget
    config = getattr(getattr(model, "module", model), "config", None)
    width = getattr(config, "num_hidden_layers", 0) * getattr(config, "hidden_size", 0)
    return max(1, activation_budget // width) if width else activation_budget


def device_token_budget(model: Any, device: torch.device, params: Sequence[torch.Tensor]) -> int:
    """``token_budget`` on ``device``: from its free memory where known.

    Gradients not yet allocated (``params`` whose ``grad`` is ``None``) are set aside.
    """
    pending = sum(p.numel() * p.element_size() for p in params if p.grad is None)
    return token_budget(model, device_type=device.type,
                        free_bytes=free_device_bytes(device, pending))


def micro_batches(lengths: Sequence[int], max_rows: int, max_tokens: int) -> list[list[int]]:
    """Row indices grouped by length: at most ``max_rows`` rows and ``max_tokens`` padded tokens.

    A row longer than ``max_tokens`` gets a micro-batch of its own.

    >>> micro_batches([5, 1, 4, 2], max_rows=3, max_tokens=8)
    [[1, 3], [2], [0]]
    """
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    groups: list[list[int]] = []
    for index in order:
        group = groups[-1] if groups else None
        # sorted ascending: the newcomer is the longest, so it sets the padded width
        if group and len(group) < max_rows and (len(group) + 1) * lengths[index] <= max_tokens:
            group.append(index)
        else:
            groups.append([index])
    return groups


def prompt_micro_batches(keys: Sequence[Hashable], prompt_lengths: Sequence[int],
                         lengths: Sequence[int], max_rows: int, max_tokens: int
                         ) -> list[list[int]]:
    """Row indices packed so that rows sharing a prompt (equal ``keys``) stay together.

    For ``shared_prefix``, where a micro-batch costs ``distinct prompts × longest prompt +
    rows × longest answer`` padded tokens (a prompt is encoded once, however many rows share
    it): a prompt's rows, by length, form units under ``max_rows`` and ``max_tokens``; units,
    by length, are packed into micro-batches under the same limits. A row over the budget
    alone gets a micro-batch of its own.

    >>> prompt_micro_batches("aabb", [3, 3, 5, 5], [6, 9, 7, 8], max_rows=4, max_tokens=16)
    [[2, 3], [0, 1]]
    """
    def cost(units: list[list[int]]) -> int:
        rows = [row for unit in units for row in unit]
        answer = max(lengths[row] - prompt_lengths[row] + 1 for row in rows)
        prefix = max(prompt_lengths[row] - 1 for row in rows)
        return len(units) * prefix + len(rows) * answer

    def fits(units: list[list[int]]) -> bool:
        return sum(map(len, units)) <= max_rows and cost(units) <= max_tokens

    by_prompt: dict[Hashable, list[list[int]]] = {}
    for row in sorted(range(len(keys)), key=lambda row: lengths[row]):
        units = by_prompt.setdefault(keys[row], [[]])
        if units[-1] and not fits([[*units[-1], row]]):
            units.append([])
        units[-1].append(row)
    batches: list[list[list[int]]] = []
    for unit in sorted((u for units in by_prompt.values() for u in units),
                       key=lambda unit: lengths[unit[-1]]):
        if batches and fits([*batches[-1], unit]):
            batches[-1].append(unit)
        else:
            batches.append([unit])
    return [sorted(row for unit in batch for row in unit) for batch in batches]
