"""Load new weights into a running engine in place, through the engine's own HTTP API.

vLLM (dev-mode routes) and SGLang each have their own sequence; any failure raises
:class:`WeightUpdateError` and the caller decides (``ServerGeneration`` restarts).

Design: docs/design/inference.md#weight_update.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

logger = logging.getLogger(__name__)

IN_PLACE_ENGINES = ("vllm", "sglang")
VLLM_DEV_MODE_ENV = "VLLM_SERVER_DEV_MODE"  # vLLM serves its /pause, /collective_rpc... routes
SGLANG_CACHE_NOT_FLUSHED = "cache was not flushed"  # 0.5.23: loaded, but requests still ran

Post = Callable[[str, Mapping[str, Any] | None], Any]
"""``post(path, json_body)`` → the decoded JSON answer; raises :class:`WeightUpdateError`."""


class WeightUpdateError(RuntimeError):
    """The engine did not take the new weights in place (the message says why)."""


@dataclass(frozen=True)
class WeightUpdate:
    """One in-place update: the calls made, in order, and how long they took together."""

    engine: str
    weights_dir: str
    calls: tuple[str, ...]
    seconds: float
    note: str = ""  # e.g. SGLang's "cache was not flushed" answer


def http_post(root: str, timeout_s: float) -> Post:
    """A ``post`` to ``root`` (the server root, no ``/v1``): non-2xx and network errors raise."""

    def post(path: str, body: Mapping[str, Any] | None) -> Any:
        url = root.rstrip("/") + path
        try:
            response = httpx.post(url, json=body, timeout=timeout_s)
        except httpx.HTTPError as error:
            raise WeightUpdateError(f"POST {path}: {type(error).__name__}: {error}") from error
        if response.status_code // 100 != 2:
            hint = (f" (the route exists only with {VLLM_DEV_MODE_ENV}=1 on vLLM)"
                    if response.status_code == 404 else "")
            raise WeightUpdateError(
                f"POST {path} answered {response.status_code}{hint}: {response.text[:300]}")
        try:
            return response.json() if response.content else None
        except ValueError:
            return response.text

    return post


def vllm_reload(post: Post, weights_dir: str) -> tuple[list[str], str]:
    """Run vLLM's dev-mode sequence; resumes the server after a pause even when a step fails."""
    calls = ["/pause?mode=wait"]
    post(calls[0], None)
    try:
        calls.append("/collective_rpc")
        answer = post(calls[-1], {"method": "reload_weights",
                                  "kwargs": {"weights_path": weights_dir}})
        if isinstance(answer, Mapping) and answer.get("error"):
            raise WeightUpdateError(f"reload_weights failed: {answer['error']}")
        calls.append("/reset_prefix_cache")
        post(calls[-1], None)
    finally:
        calls.append("/resume")
        post(calls[-1], None)
    return calls, ""


def sglang_reload(post: Post, weights_dir: str, version: str) -> tuple[list[str], str]:
    """Run SGLang's disk update; "cache was not flushed" means loaded (then flush separately)."""
    calls = ["/update_weights_from_disk"]
    answer = post(calls[0], {"model_path": weights_dir, "flush_cache": True,
                             "weight_version": version})
    if not isinstance(answer, Mapping) or "success" not in answer:
        raise WeightUpdateError(f"update_weights_from_disk: unexpected answer {answer!r}")
    if answer["success"]:
        return calls, ""
    message = str(answer.get("message", ""))
    if SGLANG_CACHE_NOT_FLUSHED not in message:
        raise WeightUpdateError(f"update_weights_from_disk refused: {message}")
    calls.append("/flush_cache")
    try:
        post(calls[-1], None)
    except WeightUpdateError as error:  # the weights are in; a stale prefix cache only costs
        logger.warning("weights loaded but %s; flushing failed too: %s", message, error)
    return calls, message


def update_weights(engine: str, post: Post, weights_dir: str, *, version: str) -> WeightUpdate:
    """Load ``weights_dir`` into the running ``engine`` in place.

    Args:
        engine: ``vllm`` or ``sglang``.
        post: how to reach the server (:func:`http_post`).
        weights_dir: a complete checkpoint directory of the served architecture.
        version: a label for the weights (SGLang's ``weight_version``), e.g. ``step-12``.

    Raises:
        WeightUpdateError: the engine has no in-place path, or a call failed (the reason).
    """
    started = time.perf_counter()
    if engine == "vllm":
        calls, note = vllm_reload(post, weights_dir)
    elif engine == "sglang":
        calls, note = sglang_reload(post, weights_dir, version)
    else:
        raise WeightUpdateError(
            f"engine {engine!r} has no in-place weight update (only {IN_PLACE_ENGINES})")
    return WeightUpdate(engine, weights_dir, tuple(calls), time.perf_counter() - started, note)
