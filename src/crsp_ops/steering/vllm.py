r"""vLLM adapter: cluster steering as a V1-interface logits processor, deltas per request.

For vLLM's V1 (legacy) model runner (``VLLM_USE_V2_MODEL_RUNNER=0``; V2 is ``vllm_v2``). Deltas
travel in ``vllm_xargs.steer_deltas``; the engine-free logic is ``SlotSteering``, and
``ClusterBiasVLLMProcessor`` exists only when vLLM is importable.

Design: docs/design/steering.md#vllm.
"""

from __future__ import annotations

from typing import Any

import torch

from crsp_ops.steering.bias import (
    STEER_DELTAS_KEY,
    ClusterBias,
    add_bias_,
    check_deltas_row,
    cluster_bias_from_env,
)


def deltas_from_extra_args(
    extra_args: dict[str, Any] | None, n_clusters: int | None
) -> tuple | None:
    """Return a request's validated deltas row, or ``None`` when it asks for no steering.

    Args:
        extra_args: ``SamplingParams.extra_args`` (the request's ``vllm_xargs``).
        n_clusters: expected number of deltas, or ``None`` to check only their form.

    Raises:
        ValueError: the deltas are not a flat list of finite numbers of the right length.
    """
    if not extra_args or extra_args.get(STEER_DELTAS_KEY) is None:
        return None
    row = extra_args[STEER_DELTAS_KEY]
    if not isinstance(row, list) or not row:
        raise ValueError(f"vllm_xargs[{STEER_DELTAS_KEY!r}] must be a non-empty flat list")
    check_deltas_row(row, n_clusters if n_clusters is not None else len(row))
    return tuple(float(value) for value in row)


def validate_steer_params(sampling_params: Any) -> None:
    """Reject malformed ``vllm_xargs["steer_deltas"]`` at request admission (a 400).

    Shared by the V1 and V2 processors' ``validate_params``; the table size comes from
    ``CRSP_STEER_TOKEN_CLUSTERS``.
    """
    extra_args = sampling_params.extra_args
    if extra_args and extra_args.get(STEER_DELTAS_KEY) is not None:
        deltas_from_extra_args(extra_args, cluster_bias_from_env().n_clusters)


def cluster_bias_for_model(vllm_config: Any) -> ClusterBias:
    """The table from ``CRSP_STEER_TOKEN_CLUSTERS``, checked against the served vocabulary.

    Shared by the V1 and V2 processors' constructors.
    """
    core = cluster_bias_from_env()
    model_vocab = vllm_config.model_config.get_vocab_size()
    if core.vocab_size > model_vocab:
        raise ValueError(
            f"token→cluster table has {core.vocab_size} entries but the model's "
            f"vocabulary has {model_vocab}: the table was built for another tokenizer"
        )
    return core


class SlotSteering:
    """Per-slot deltas of vLLM's persistent batch and the bias they imply.

    ``update`` follows the ``BatchUpdate`` contract (removed, then added, then moved; added
    entries unpacked as ``index, params, *_`` because the tuple's tail changed across
    versions); ``apply`` adds the cached bias to ``logits (num_reqs, W)`` in place.
    """

    def __init__(self, core: ClusterBias):
        self.core = core
        self.slots: dict[int, tuple] = {}  # batch index -> deltas row
        self._bias: torch.Tensor | None = None  # (num_reqs, V), valid until the batch changes
        self._bias_key: tuple | None = None

    def update(self, batch_update: Any | None) -> None:
        """Apply a vLLM ``BatchUpdate`` (``None`` means the batch did not change)."""
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.slots.pop(index, None)
        for index, params, *_ in batch_update.added:
            row = deltas_from_extra_args(params.extra_args, self.core.n_clusters)
            if row is None:
                self.slots.pop(index, None)
            else:
                self.slots[index] = row
        for source, target, direction in batch_update.moved:
            moving, displaced = self.slots.pop(source, None), self.slots.pop(target, None)
            if moving is not None:
                self.slots[target] = moving
            if displaced is not None and direction.name == "SWAP":
                self.slots[source] = displaced
        self._bias_key = None

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        """Add each steered slot's bias to its logits row (in place) and return the logits."""
        if not self.slots:
            return logits
        key = (logits.shape[0], logits.device, logits.dtype)
        if self._bias_key != key:
            rows = [self.slots.get(index) for index in range(logits.shape[0])]
            self._bias = self.core.bias_for(rows, device=logits.device, dtype=logits.dtype)
            self._bias_key = key
        if self._bias is None:
            return logits
        return add_bias_(logits, self._bias)


try:
    from vllm.v1.sample.logits_processor import LogitsProcessor
except ImportError:  # vLLM is optional; the logic above is engine-free
    LogitsProcessor = None

if LogitsProcessor is not None:

    class ClusterBiasVLLMProcessor(LogitsProcessor):
        """vLLM V1-runner logits processor adding ``deltas[token_clusters]`` per request."""

        @classmethod
        def validate_params(cls, sampling_params: Any) -> None:
            """Reject malformed ``vllm_xargs["steer_deltas"]`` before the request is queued."""
            validate_steer_params(sampling_params)

        def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool):
            core = cluster_bias_for_model(vllm_config)
            self._steering = SlotSteering(core)

        def is_argmax_invariant(self) -> bool:
            """False: a bias changes which token is most likely."""
            return False

        def update_state(self, batch_update: Any | None) -> None:
            """Track added, removed and moved requests' deltas."""
            self._steering.update(batch_update)

        def apply(self, logits: torch.Tensor) -> torch.Tensor:
            """Add the per-request bias to ``logits (num_reqs, W)`` in place."""
            return self._steering.apply(logits)
