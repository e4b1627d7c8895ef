"""Canary: prove a backend really applies the steering processor before trusting it.

Engines can drop a logits processor silently; a greedy run with a huge delta must change the
output, else :class:`SteeringCanaryError` names the engine and what to check.

Design: docs/design/inference.md#canary.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from crsp_ops.inference.backend import GenerationBackend, Message
from crsp_ops.inference.completions import Completion, SamplingParams

logger = logging.getLogger(__name__)

CANARY_DELTA = 1.0e4  # dwarfs any real logit gap, still finite in fp16/bf16
EOS_CLUSTER = 0
CANARY_CONVERSATION: tuple[Message, ...] = (
    {"role": "user", "content": "Write one short sentence about the sea."},
)

ENGINE_HINTS = {
    "sglang": (
        "start SGLang with --enable-custom-logit-processor, send the crsp_ops processor string in "
        "custom_logit_processor, make crsp_ops (same version) importable by the server, and "
        "disable speculative decoding (the EAGLE-v2 verify path skips custom processors)"
    ),
    "vllm": (
        "start vLLM with --logits-processors naming the crsp_ops processor of its runner "
        "(crsp_ops.steering.vllm_v2:ClusterBiasVLLMV2Processor with VLLM_USE_V2_MODEL_RUNNER=1, "
        "crsp_ops.steering.vllm:ClusterBiasVLLMProcessor with VLLM_USE_V2_MODEL_RUNNER=0; the "
        "{vllm_processor} placeholder picks it), point the server at the token-cluster table "
        "(CRSP_STEER_TOKEN_CLUSTERS), and check the server log for ignored vllm_xargs"
    ),
    "local": (
        "start `python -m crsp_ops.inference.local_server` with --token-clusters PATH"
    ),
    "transformers": "build the transformers backend with the token-cluster table",
}


class SteeringCanaryError(RuntimeError):
    """The backend did not apply the steering deltas."""


@dataclass(frozen=True)
class CanaryResult:
    """What the canary sent and saw (log it next to the run)."""

    engine: str
    cluster: int  # the cluster that received the delta
    delta: float  # the delta it received
    unsteered_ids: tuple[int, ...]
    steered_ids: tuple[int, ...]


def canary_deltas(
    n_clusters: int,
    unsteered: Completion,
    token_clusters: Sequence[int] | None,
) -> tuple[list[float], int]:
    """Deltas that must change a greedy output that began like ``unsteered``.

    Returns:
        ``(deltas, cluster)``: all zeros except ``deltas[cluster]``.
    """
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    if not unsteered.token_ids:
        raise ValueError("unsteered canary output is empty; cannot pick a cluster to steer")
    deltas = [0.0] * n_clusters
    first = unsteered.token_ids[0]
    if token_clusters is not None:
        cluster, delta = int(token_clusters[first]), -CANARY_DELTA
    elif len(unsteered.token_ids) == 1 and unsteered.finish_reason == "stop":
        cluster, delta = EOS_CLUSTER, -CANARY_DELTA  # it already stops at once: forbid EOS
    else:
        cluster, delta = EOS_CLUSTER, CANARY_DELTA  # force an immediate EOS
    if not 0 <= cluster < n_clusters:
        raise ValueError(f"token {first} maps to cluster {cluster}, outside 0..{n_clusters - 1}")
    deltas[cluster] = delta
    return deltas, cluster


def steering_applied(
    unsteered: Completion,
    steered: Completion,
    cluster: int,
    token_clusters: Sequence[int] | None,
) -> bool:
    """True when the steered output shows the delta took effect."""
    if steered.token_ids == unsteered.token_ids:
        return False
    if token_clusters is not None and steered.token_ids:
        return int(token_clusters[steered.token_ids[0]]) != cluster
    return True


def failure_message(engine: str, result: CanaryResult, reason: str) -> str:
    """The error text: what happened and what to check for this engine."""
    hint = ENGINE_HINTS.get(engine, "this engine has no known way to load the crsp_ops processor")
    return (
        f"steering canary failed on engine {engine!r}: {reason} (delta {result.delta:+g} on "
        f"cluster {result.cluster}; unsteered ids {list(result.unsteered_ids)[:8]}, steered ids "
        f"{list(result.steered_ids)[:8]}). The server is not applying the processor. Check: {hint}."
    )


def run_canary(
    backend: GenerationBackend,
    n_clusters: int,
    *,
    token_clusters: Sequence[int] | None = None,
    engine: str | None = None,
    conversation: Sequence[Message] = CANARY_CONVERSATION,
    max_new_tokens: int = 4,
) -> CanaryResult:
    """Run the canary; return its evidence or raise.

    Args:
        backend: any generation backend that takes deltas.
        n_clusters: the steering table's cluster count (deltas length).
        token_clusters: the token→cluster table, if known client-side (a sharper check).
        engine: name for messages and hints; defaults to ``backend.engine``.
        conversation: the canary prompt.
        max_new_tokens: response length of both greedy requests.

    Raises:
        SteeringCanaryError: the steered output did not change, or the backend refused the
            deltas (e.g. a server that rejects the steering fields).
    """
    engine = engine or getattr(backend, "engine", type(backend).__name__)
    params = SamplingParams(max_new_tokens=max_new_tokens, temperature=0.0, top_p=1.0, seed=0)
    [unsteered] = backend.generate([list(conversation)], params)
    deltas, cluster = canary_deltas(n_clusters, unsteered, token_clusters)
    pending = CanaryResult(engine, cluster, deltas[cluster], unsteered.token_ids, ())
    try:
        [steered] = backend.generate([list(conversation)], params, deltas=deltas)
    except (ValueError, RuntimeError) as error:
        raise SteeringCanaryError(
            failure_message(engine, pending, f"the steered request failed: {error}")
        ) from error
    result = CanaryResult(engine, cluster, deltas[cluster], unsteered.token_ids, steered.token_ids)
    if not steering_applied(unsteered, steered, cluster, token_clusters):
        raise SteeringCanaryError(failure_message(engine, result, "greedy output did not change"))
    logger.info(
        "steering canary passed on %s: delta %+g on cluster %d changed %s -> %s",
        engine, result.delta, cluster, unsteered.token_ids[:4], steered.token_ids[:4],
    )
    return result
