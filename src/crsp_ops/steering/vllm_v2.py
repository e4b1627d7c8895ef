r"""vLLM adapter for **Model Runner V2**: cluster steering with per-slot deltas on the device.

V2 loads only classes of its own interface; requests carry deltas as for V1
(``vllm_xargs.steer_deltas``). The engine-free logic is ``SlotDeltas``;
``ClusterBiasVLLMV2Processor`` exists only when vLLM's V2 interface is importable.

Design: docs/design/steering.md#vllm_v2.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from crsp_ops.steering.bias import (
    ClusterBias,
    add_bias_,
    bias_rows,
)
from crsp_ops.steering.vllm import (
    cluster_bias_for_model,
    deltas_from_extra_args,
    validate_steer_params,
)

try:
    from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as V2LogitsProcessor
except ImportError:  # vLLM (or a vLLM without Model Runner V2 processors) is optional
    V2LogitsProcessor = None


class SlotDeltas:
    """Per-slot deltas of Model Runner V2 in a device table, and the bias they add.

    Args:
        core: the token→cluster table and its number of clusters.
        max_num_reqs: number of request slots.
        device: where logits live.
    """

    def __init__(self, core: ClusterBias, max_num_reqs: int, device: torch.device | str):
        self.n_clusters = core.n_clusters
        self.table = core.table.to(device)  # (V,) int64, resident for the processor's life
        self.deltas = torch.zeros(max_num_reqs, core.n_clusters, dtype=torch.float32,
                                  device=device)  # (max_reqs, K)
        self.steered = np.zeros(max_num_reqs, dtype=bool)  # host copy: skip without a sync
        self._staged: dict[int, tuple[float, ...]] = {}

    def add(self, slot: int, extra_args: dict[str, Any] | None) -> bool:
        """Stage ``slot``'s deltas from a request's ``extra_args``; True when it is steered."""
        row = deltas_from_extra_args(extra_args, self.n_clusters)
        if row is None:
            if self.steered[slot] or slot in self._staged:  # a recycled slot: clear it
                self._staged[slot] = (0.0,) * self.n_clusters
            self.steered[slot] = False
            return False
        self._staged[slot] = row
        self.steered[slot] = True
        return True

    def remove(self, slot: int) -> None:
        """Forget ``slot`` (its row is zeroed with the next staged writes)."""
        self.add(slot, None)

    def flush(self) -> None:
        """Copy the staged rows to the device table in one transfer."""
        if not self._staged:
            return
        slots = torch.tensor(list(self._staged), dtype=torch.int64)
        rows = torch.tensor(list(self._staged.values()), dtype=torch.float32)  # (n, K)
        self.deltas.index_copy_(0, slots.to(self.deltas.device), rows.to(self.deltas.device))
        self._staged.clear()

    def apply(self, logits: torch.Tensor, row_slots: torch.Tensor,
              batch_slots: np.ndarray | None = None) -> torch.Tensor:
        """Add each row's bias to ``logits (rows, W)`` in place and return them.

        Args:
            logits: float32 logits, one row per ``row_slots`` entry.
            row_slots: ``(rows,)`` slot of each logits row (``ctx.expanded_idx_mapping``).
            batch_slots: host slots of this step's requests (``ctx.idx_mapping_np``) to skip
                the gather when none is steered; ``None`` always applies.
        """
        if batch_slots is not None and not self.steered[batch_slots].any():
            return logits
        row_deltas = self.deltas.index_select(0, row_slots.to(torch.int64))  # (rows, K)
        return add_bias_(logits, bias_rows(self.table, row_deltas))  # gather (rows, V), add


if V2LogitsProcessor is not None:

    class ClusterBiasVLLMV2Processor(V2LogitsProcessor):
        """Model Runner V2 logits processor adding ``deltas[token_clusters]`` per request."""

        @classmethod
        def validate_params(cls, sampling_params: Any) -> None:
            """Reject malformed ``vllm_xargs["steer_deltas"]`` at request admission (a 400)."""
            validate_steer_params(sampling_params)

        def __init__(self, vllm_config: Any, req_states: Any):
            core = cluster_bias_for_model(vllm_config)
            self._slots = SlotDeltas(core, req_states.max_num_reqs, req_states.device)

        def is_argmax_invariant(self) -> bool:
            """False: a bias changes which token is most likely (V2 always applies it)."""
            return False

        def add_request(self, req_idx: int, sampling_params: Any) -> bool:
            """Stage the slot's deltas; True when the request is steered."""
            return self._slots.add(req_idx, sampling_params.extra_args)

        def remove_request(self, req_idx: int) -> None:
            """Forget a finished request's slot."""
            self._slots.remove(req_idx)

        def apply_staged_writes(self) -> None:
            """Copy staged per-slot deltas to the device (once per step, before the forward)."""
            self._slots.flush()

        def apply(self, logits: torch.Tensor, ctx: Any) -> torch.Tensor:
            """Add each row's bias, rows mapped to slots by ``ctx.expanded_idx_mapping``."""
            return self._slots.apply(logits, ctx.expanded_idx_mapping, ctx.idx_mapping_np)
