"""The per-request fields that steer an OpenAI-compatible server (pass them as ``extra_body``)."""

from __future__ import annotations

from collections.abc import Sequence

from crsp_ops.steering.bias import STEER_DELTAS_KEY, check_deltas_row
from crsp_ops.steering.sglang import sglang_processor_string

STEERING_ENGINES = ("sglang", "vllm")


def steering_request_fields(engine: str, deltas: Sequence[float]) -> dict:
    """Return the ``extra_body`` fields that apply ``deltas`` on ``engine``'s server.

    Args:
        engine: ``"sglang"`` (needs ``--enable-custom-logit-processor``) or ``"vllm"`` (needs
            ``--logits-processors crsp_ops.steering.vllm:ClusterBiasVLLMProcessor``).
        deltas: per-cluster deltas, index = cluster id.

    Returns:
        SGLang: ``{"custom_logit_processor": <the one processor string>, "custom_params":
        {"steer_deltas": [...]}}``; vLLM: ``{"vllm_xargs": {"steer_deltas": [...]}}`` (a flat
        list: vLLM rejects nested values there).

    Raises:
        ValueError: an unknown engine, or deltas that are not finite numbers.

    >>> steering_request_fields("vllm", [0.0, -2.5])
    {'vllm_xargs': {'steer_deltas': [0.0, -2.5]}}
    """
    values = list(deltas)
    check_deltas_row(values, len(values))
    if not values:
        raise ValueError("deltas must not be empty")
    values = [float(value) for value in values]
    if engine == "sglang":
        return {
            "custom_logit_processor": sglang_processor_string(),
            "custom_params": {STEER_DELTAS_KEY: values},
        }
    if engine == "vllm":
        return {"vllm_xargs": {STEER_DELTAS_KEY: values}}
    raise ValueError(
        f"unknown steering engine {engine!r}: expected one of {', '.join(STEERING_ENGINES)} "
        "(other servers have no per-request logits-processor hook)"
    )
