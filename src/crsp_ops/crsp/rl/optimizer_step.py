"""The update's optimizer step: gradient clipping, and no noise step without a signal.

``update.policy_update`` calls both once per epoch.
"""

from __future__ import annotations

from typing import Any

import torch

from crsp_ops.crsp.policy.sharding import as_float


def optimizer_step(optimizer: Any, params: list, flat: bool, step_when_flat: bool) -> bool:
    """The epoch's optimizer step; False when a flat step (no advantage anywhere) takes none.

    A flat step's gradient is a KL term's noise or 0, and is never applied: with
    ``step_when_flat`` it is replaced by 0 and AdamW still steps (its momentum alone moves the
    weights, as in TRL's Trainer).
    """
    if flat:
        if not step_when_flat:
            return False
        for param in params:
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            else:
                param.grad.zero_()
    optimizer.step()
    return True


def clip_gradients(accelerator: Any, params: list[torch.Tensor], max_grad_norm: float, *,
                   lockstep: bool) -> float:
    """Clip to ``max_grad_norm`` (when > 0) and return the gradient norm before clipping."""
    if max_grad_norm > 0:  # sharded (lockstep): torch's own clip, DTensor-aware
        norm = (torch.nn.utils.clip_grad_norm_(params, max_grad_norm) if lockstep else
                accelerator.clip_grad_norm_(params, max_grad_norm))
    else:
        norm = torch.nn.utils.get_total_norm([p.grad for p in params if p.grad is not None])
    return as_float(norm)
