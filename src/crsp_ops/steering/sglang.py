"""SGLang adapter: cluster steering as a ``CustomLogitProcessor`` with deltas per request.

Start SGLang with ``--enable-custom-logit-processor`` and ``CRSP_STEER_TOKEN_CLUSTERS``; every
request sends the same processor string (one processor group, one cache entry) and its deltas
in ``custom_params``.

Design: docs/design/steering.md#sglang.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Sequence
from functools import cache
from typing import Any

import torch

from crsp_ops.steering.bias import STEER_DELTAS_KEY, cluster_bias_from_env

PROCESSOR_CLASS_NAME = "ClusterBiasSGLangProcessor"


def apply_sglang_steering(
    logits: torch.Tensor, custom_param_list: Sequence[dict[str, Any] | None] | None
) -> torch.Tensor:
    """Add each row's cluster bias to ``logits (B, W)`` in place and return them.

    Args:
        logits: the rows of the requests using this processor.
        custom_param_list: per row, the request's ``custom_params`` (``None`` if not sent);
            ``custom_params["steer_deltas"]`` is that row's flat list of per-cluster deltas.
    """
    if not custom_param_list:
        return logits
    rows = [params.get(STEER_DELTAS_KEY) if params else None for params in custom_param_list]
    if all(row is None for row in rows):
        return logits
    return cluster_bias_from_env().apply_(logits, rows)


try:
    from sglang.srt.sampling.custom_logit_processor import CustomLogitProcessor
except ImportError:  # SGLang is optional; the logic above is engine-free
    CustomLogitProcessor = None

if CustomLogitProcessor is not None:

    class ClusterBiasSGLangProcessor(CustomLogitProcessor):
        """Stateless SGLang processor: all state is per process, all deltas per request."""

        def __call__(
            self,
            logits: torch.Tensor,
            custom_param_list: list[dict[str, Any] | None] | None = None,
        ) -> torch.Tensor:
            """Apply ``apply_sglang_steering`` to the rows using this processor."""
            return apply_sglang_steering(logits, custom_param_list)


@cache
def sglang_processor_string() -> str:
    """Return the ``custom_logit_processor`` string to send, identical for every request.

    SGLang's current ``to_str`` pickles the processor *class* by reference; that pickle is
    written here directly, so clients without SGLang installed send the same bytes. When the
    installed SGLang is an older one whose ``to_str`` pickles an instance, its own ``to_str``
    is used instead (the server must run the same SGLang version as this client).
    """
    if CustomLogitProcessor is not None and not _to_str_is_classmethod(CustomLogitProcessor):
        return ClusterBiasSGLangProcessor().to_str()
    # Pickle protocol 2: GLOBAL "<module>\n<name>\n" then STOP; loads the class by reference.
    pickled = b"\x80\x02c" + f"{__name__}\n{PROCESSOR_CLASS_NAME}\n".encode() + b"."
    return json.dumps({"callable": pickled.hex()})


def _to_str_is_classmethod(base: type) -> bool:
    return isinstance(inspect.getattr_static(base, "to_str"), classmethod)
