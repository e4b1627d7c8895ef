"""The ``openai-server`` backend: chat completions from any OpenAI-compatible server.

Retries are bounded and logged here (the client's own are off, as they re-sample silently); a
minibatch returns every completion or raises; deltas to an engine that cannot steer raise.

Design: docs/design/inference.md#openai_backend.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import openai

from crsp_ops.inference.backend import GenerationBackend, Message
from crsp_ops.inference.completions import Completion, LogprobSemantics, SamplingParams
from crsp_ops.inference.context import InferenceContext
from crsp_ops.inference.hf_chat import prefill_request_fields
from crsp_ops.inference.request_options import (
    ENGINES,
    RolloutRequestOptions,
    rollout_request_options,
    unsupported_extras,
)
from crsp_ops.inference.response_fields import engine_prompt_ids, engine_response_ids
from crsp_ops.inference.server_manager import ServerManager
from crsp_ops.steering.request_fields import steering_request_fields

logger = logging.getLogger(__name__)

STEERABLE_ENGINES = ("vllm", "sglang")  # ``openai`` = any server without our processor
TOKEN_ID_PREFIX = "token_id:"  # vLLM's return_tokens_as_token_ids form


class RequestFailedError(RuntimeError):
    """A request failed permanently (non-transient error, or retries exhausted)."""


@dataclass(frozen=True)
class RetryPolicy:
    """Bounded retries with exponential backoff for transient request failures."""

    max_attempts: int = 4  # total attempts per request, the first one included
    backoff_initial_s: float = 0.5  # pause after the first failure
    backoff_max_s: float = 8.0  # cap on one pause
    backoff_multiplier: float = 2.0  # growth per failure

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff_initial_s < 0 or self.backoff_max_s < 0 or self.backoff_multiplier < 1:
            raise ValueError("backoffs must be >= 0 and backoff_multiplier >= 1")

    def delay_s(self, failures: int) -> float:
        """Pause before the next attempt after ``failures`` failed attempts (>= 1)."""
        delay = self.backoff_initial_s * self.backoff_multiplier ** (failures - 1)
        return min(self.backoff_max_s, delay)


@dataclass(frozen=True)
class OpenAIServerSettings:
    """Where the server is and how to talk to it."""

    base_url: str  # OpenAI API root, e.g. "http://127.0.0.1:8000/v1"
    model: str  # served model name
    engine: str = "vllm"  # "vllm" | "sglang" | "openai" (any other): decides request fields
    api_key: str = "EMPTY"  # local servers ignore it; the client requires one
    max_concurrency: int = 8  # requests in flight at once
    request_timeout_s: float = 300.0  # whole-request timeout (the client default is 600 s)
    connect_timeout_s: float = 5.0  # TCP connect timeout
    top_logprobs: int = 0  # alternatives per position (0 = only the sampled token)
    n_clusters: int | None = None  # steering table size, to check deltas client-side
    logprob_semantics: LogprobSemantics | None = None  # None = the engine's default (see
    # request_options: vLLM needs a matching --logprobs-mode launch flag for "processed")
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    chat_template_kwargs: Mapping[str, Any] | None = None  # sent with every request when set

    def __post_init__(self) -> None:
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.max_concurrency < 1:
            raise ValueError(f"max_concurrency must be >= 1, got {self.max_concurrency}")
        if self.request_timeout_s <= 0 or self.connect_timeout_s <= 0:
            raise ValueError("request_timeout_s and connect_timeout_s must be > 0")
        if self.top_logprobs < 0:
            raise ValueError(f"top_logprobs must be >= 0, got {self.top_logprobs}")
        self.request_options()  # raises for semantics the engine cannot return
        check_extras(self.engine, ["chat_template_kwargs"] if self.chat_template_kwargs else [])

    def request_options(self) -> RolloutRequestOptions:
        """The engine's rollout request fields and logprob semantics."""
        return rollout_request_options(self.engine, self.logprob_semantics)


def is_transient(error: BaseException) -> bool:
    """True for failures worth retrying: connection, timeout, 408, 429 and 5xx."""
    if isinstance(error, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(error, openai.APIStatusError):
        return error.status_code in (408, 429) or error.status_code >= 500
    return False


def validate_deltas(
    deltas: Sequence[float] | None, engine: str, n_clusters: int | None
) -> list[float] | None:
    """Check steering deltas against the engine and table size; return them as floats.

    Raises:
        ValueError: deltas for an engine that cannot steer, a wrong length, or non-finite values.
    """
    if deltas is None:
        return None
    if engine not in STEERABLE_ENGINES:
        raise ValueError(
            f"steering deltas given, but engine {engine!r} cannot steer; use one of "
            f"{STEERABLE_ENGINES} with the crsp_ops processor loaded, or pass deltas=None"
        )
    values = [float(value) for value in deltas]
    if n_clusters is not None and len(values) != n_clusters:
        raise ValueError(f"{len(values)} deltas for a table of {n_clusters} clusters")
    if not all(math.isfinite(value) for value in values):
        raise ValueError("steering deltas must be finite")
    return values


def check_extras(engine: str, fields: Iterable[str]) -> None:
    """Raise unless ``engine`` may be sent every request field in ``fields``.

    Raises:
        ValueError: naming the first field the engine is known not to honour.
    """
    refused = unsupported_extras(engine, fields)
    if refused:
        raise ValueError(f"engine {engine!r} cannot honour {refused[0]}: leave it off, or use "
                         "an engine that takes it (vllm, sglang, local)")


def steering_fields(engine: str, deltas: list[float] | None) -> dict[str, Any]:
    """The engine's ``extra_body`` steering fields ({} without deltas)."""
    if deltas is None:
        return {}
    # Imported lazily: the steering package pulls torch-side code the client never needs.

    return dict(steering_request_fields(engine, deltas))


def parse_token_id(token: str) -> int:
    """The id in a vLLM ``token_id:N`` logprob token.

    Raises:
        ValueError: another form; the caller needs a tokenizer to map it.
    """
    if token.startswith(TOKEN_ID_PREFIX):
        return int(token[len(TOKEN_ID_PREFIX):])
    raise ValueError(
        f"response has no token_ids and logprob token {token!r} is not in 'token_id:N' form; "
        "request return_token_ids / return_tokens_as_token_ids, or give the backend a tokenizer"
    )


def response_token_ids(choice: Any, tokenizer: Any | None) -> list[int]:
    """Response ids: the engine's own (either spelling), else the logprob tokens as ids."""
    engine_ids = engine_response_ids(choice)
    if engine_ids is not None:
        return engine_ids
    content = choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
    if tokenizer is None or all(item.token.startswith(TOKEN_ID_PREFIX) for item in content):
        return [parse_token_id(item.token) for item in content]
    # Imported lazily: only servers that return neither ids nor token_id:N need the
    # byte-level round trip the InferenceContext implements.

    return [int(t) for t in InferenceContext(tokenizer).response_tokens_from_choice(choice)]


def completion_from_response(
    response: Any, semantics: LogprobSemantics, tokenizer: Any | None = None
) -> Completion:
    """Turn one chat-completion response (``n=1``) into a :class:`Completion`.

    Args:
        response: the ``openai`` client's ``ChatCompletion``.
        semantics: what the logprobs mean (``none`` when they were not requested).
        tokenizer: optional HF tokenizer for recovering ids from logprob tokens.

    Raises:
        ValueError: no choice, or token ids that cannot be recovered or do not match logprobs.
    """
    if not response.choices:
        raise ValueError("response has no choices")
    choice = response.choices[0]
    content = choice.logprobs.content if choice.logprobs and choice.logprobs.content else []
    token_ids = response_token_ids(choice, tokenizer)
    prompt_ids = engine_prompt_ids(choice, response) or ()
    logprobs = tuple(float(item.logprob) for item in content) if semantics != "none" else ()
    if semantics != "none" and len(logprobs) != len(token_ids):
        raise ValueError(
            f"{len(logprobs)} logprobs for {len(token_ids)} response tokens: was logprobs=True "
            "sent, and does the server return one logprob per token?"
        )
    usage = response.usage.model_dump() if response.usage is not None else {}
    return Completion(
        text=choice.message.content or "",
        prompt_token_ids=tuple(int(t) for t in prompt_ids),
        token_ids=tuple(int(t) for t in token_ids),
        logprobs=logprobs,
        finish_reason=choice.finish_reason or "stop",
        logprob_semantics=semantics,
        extra={"usage": usage, "model": response.model},
    )


class OpenAIServerBackend(GenerationBackend):
    """Generate through an OpenAI-compatible chat-completions server.

    Args:
        settings: server address, engine kind, timeouts, concurrency and retry policy.
        server: optional manager of the server process; consulted (and allowed to restart the
            server) before every retry. The backend never stops it: its owner does.
        tokenizer: optional HF tokenizer, used only when the server returns neither
            ``token_ids`` nor ``token_id:N`` logprob tokens.
        client: an ``openai.OpenAI`` to use instead of building one (tests, custom transport).
    """

    def __init__(
        self,
        settings: OpenAIServerSettings,
        *,
        server: ServerManager | None = None,
        tokenizer: Any | None = None,
        client: openai.OpenAI | None = None,
    ) -> None:
        self.settings = settings
        self.server = server
        self.tokenizer = tokenizer
        self._client = client or openai.OpenAI(
            base_url=settings.base_url,
            api_key=settings.api_key,
            max_retries=0,  # our own logged retries only: client retries re-sample silently
            timeout=openai.Timeout(settings.request_timeout_s, connect=settings.connect_timeout_s),
        )
        self._pool = ThreadPoolExecutor(
            max_workers=settings.max_concurrency, thread_name_prefix="openai-backend"
        )
        self._options = settings.request_options()
        self._closed = False
        self._retry_count = 0
        self._count_lock = threading.Lock()

    @property
    def engine(self) -> str:
        """The server kind ("vllm", "sglang" or "generic")."""
        return self.settings.engine

    @property
    def retry_count(self) -> int:
        """Retries performed over the backend's lifetime (for logging as a metric)."""
        return self._retry_count

    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        deltas: Sequence[float] | None = None,
    ) -> list[Completion]:
        """Send one request per conversation, at most ``max_concurrency`` in flight.

        With ``params.seed`` set, request ``i`` carries seed ``seed + i``: distinct requests
        (e.g. a group of identical prompts) get distinct but reproducible samples.

        Raises:
            ValueError: bad deltas (see :func:`validate_deltas`), or a knob of ``params`` the
                engine is known not to honour.
            RequestFailedError: a request failed permanently; no partial batch is returned.
        """
        if self._closed:
            raise RuntimeError("backend is closed")
        check_extras(self.settings.engine, params.engine_extras)
        checked = validate_deltas(deltas, self.settings.engine, self.settings.n_clusters)
        extra_body = {**steering_fields(self.settings.engine, checked), **params.engine_extras}
        if self.settings.chat_template_kwargs:
            extra_body["chat_template_kwargs"] = dict(self.settings.chat_template_kwargs)
        futures = [
            self._pool.submit(self._complete, index, list(messages), params, extra_body)
            for index, messages in enumerate(conversations)
        ]
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:
                future.cancel()
            raise

    def _request_kwargs(
        self, messages: list[Message], params: SamplingParams, index: int, extra_body: dict
    ) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "model": self.settings.model,
            "messages": messages,
            "max_tokens": params.max_new_tokens,
            "temperature": params.temperature,
            "top_p": params.top_p,
            "n": 1,
        }
        if params.seed is not None:
            fields["seed"] = params.seed + index
        if self.settings.top_logprobs:
            fields["top_logprobs"] = self.settings.top_logprobs
        # a final assistant message is a prefill the server continues (hf_chat's convention)
        extra_body = {**extra_body, **prefill_request_fields(messages)}
        return self._options.create_kwargs(extra_body=extra_body, **fields)

    def _complete(
        self, index: int, messages: list[Message], params: SamplingParams, extra_body: dict
    ) -> Completion:
        kwargs = self._request_kwargs(messages, params, index, extra_body)
        policy = self.settings.retry
        for attempt in range(1, policy.max_attempts + 1):
            try:
                response = self._client.chat.completions.create(**kwargs)
            except openai.OpenAIError as error:
                if not is_transient(error):
                    raise RequestFailedError(
                        f"request {index} failed (not retried): {_describe(error)}"
                    ) from error
                if attempt == policy.max_attempts:
                    raise RequestFailedError(
                        f"request {index} failed after {attempt} attempts: {_describe(error)}"
                    ) from error
                self._before_retry(index, attempt, error)
                continue
            completion = completion_from_response(
                response, self._options.logprob_semantics, self.tokenizer
            )
            completion.extra["attempts"] = attempt
            return completion
        raise AssertionError("unreachable")  # the loop returns or raises

    def _before_retry(self, index: int, attempt: int, error: BaseException) -> None:
        delay = self.settings.retry.delay_s(attempt)
        with self._count_lock:
            self._retry_count += 1
        logger.warning(
            "request %d attempt %d/%d failed (%s); retrying in %.2fs",
            index, attempt, self.settings.retry.max_attempts, _describe(error), delay,
        )
        time.sleep(delay)
        if self.server is not None:
            if self.server.ensure_running():
                logger.warning("server was restarted before retrying request %d", index)

    def close(self) -> None:
        """Shut the worker pool and the HTTP client down. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        self._pool.shutdown(wait=True, cancel_futures=True)
        self._client.close()


def _describe(error: BaseException) -> str:
    status = getattr(error, "status_code", None)
    name = type(error).__name__
    return f"{name} {status}: {error}" if status is not None else f"{name}: {error}"
