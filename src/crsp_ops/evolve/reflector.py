"""The reflector proposer: an OpenAI-compatible LLM proposes deltas with structured outputs.

The client's own retries are off (``max_retries=0``): one bounded loop here retries transport
errors and invalid replies alike, records every attempt, and never adopts invalid deltas.

Policy on a bad reply: every failure of transport, HTTP, JSON, schema or content (see
``reflector_reply.read_reply``, the one place a reply is judged) is a failed attempt with its
reason, recorded in the exchange files; the proposer retries up to ``max_attempts`` (with
backoff); when none is valid the proposal fails and the loop keeps the last good deltas, or
stops when ``evolve.on_proposal_failure=stop``. Errors and raw replies are redacted (the key
the client was built with, secret environment values and secret-looking patterns) before
they are recorded, so a server echoing the key does not put it on disk or in MLflow.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from crsp_ops import openai_client
from crsp_ops.evolve.iteration import Evidence, Exchange, Proposal
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.reflector_prompt import (
    SummaryEntry,
    append_entry,
    build_messages,
    render_summary,
)
from crsp_ops.evolve.reflector_reply import HttpReply, printable, read_reply
from crsp_ops.evolve.reflector_schema import MAX_SUMMARY_CHARS, response_format
from crsp_ops.openai_client import resolve_endpoint
from crsp_ops.tracking.redaction import Redactor

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0


def make_openai_client(*, base_url: str, api_key_env: str, timeout_s: float) -> Any:
    """The reflector's ``openai.OpenAI`` client: explicit timeout, no automatic retries.

    ``base_url`` and ``api_key_env`` win when set; else ``OPENAI_BASE_URL`` and
    ``OPENAI_API_KEY`` apply, as in the OpenAI SDK (see ``crsp_ops.openai_client``).

    Raises:
        ValueError: the endpoint is the OpenAI API and no variable holds a key.
    """
    endpoint = resolve_endpoint(
        base_url=base_url, api_key_env=api_key_env, role="reflector",
        url_option="reflector.base_url", key_option="reflector.api_key_env",
    )
    return openai_client.make_openai_client(endpoint, timeout_s=timeout_s, max_retries=0)


class ReflectorProposer(Proposer):
    """Ask an LLM for the next deltas and an update of its evolving summary.

    Args:
        client: an ``openai.OpenAI``-compatible client (``chat.completions.create``).
        model: model name sent with each request.
        n_clusters: number of cluster ids; replies must have exactly these keys.
        clamp: clip proposed deltas to ``[-clamp, clamp]`` (``None``: no clip).
        max_attempts: requests per iteration until a valid reply.
        retry_backoff_s: wait before the n-th retry is ``retry_backoff_s * 2**(n-1)``.
        temperature: sampling temperature of the replies.
        max_tokens: reply token limit.
        k_longest: show only the k longest responses (0 = all).
        max_response_chars: truncate each shown response (0 = never).
        max_summary_chars: longest accepted summary update (longer replies are rejected).
        redactor: applied to errors, raw replies and summaries before they are recorded
            (default: from the environment and the client's ``api_key``).
        sleep: injectable for tests.
    """

    name = "reflector"

    def __init__(
        self,
        client: Any,
        *,
        model: str,
        n_clusters: int,
        clamp: float | None,
        max_attempts: int,
        retry_backoff_s: float,
        temperature: float,
        max_tokens: int,
        k_longest: int,
        max_response_chars: int,
        max_summary_chars: int = MAX_SUMMARY_CHARS,
        redactor: Redactor | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.client = client
        self.model = model
        self.n_clusters = n_clusters
        self.clamp = clamp
        self.max_attempts = max_attempts
        self.retry_backoff_s = retry_backoff_s
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.k_longest = k_longest
        self.max_response_chars = max_response_chars
        self.max_summary_chars = max_summary_chars
        self.redactor = redactor or Redactor.from_env(os.environ, extra=_client_secrets(client))
        self.sleep = sleep
        self.summary: list[SummaryEntry] = []

    def propose(self, evidence: Evidence) -> Proposal:
        """Send the four inputs; retry invalid replies; append the accepted summary."""
        messages = build_messages(
            cluster_descriptions=evidence.cluster_descriptions,
            deltas=evidence.deltas,
            summary=render_summary(self.summary),
            records=evidence.records,
            k_longest=self.k_longest,
            max_response_chars=self.max_response_chars,
            frontier_lessons=evidence.frontier_lessons,
        )
        request = {
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "response_format": response_format([str(i) for i in range(self.n_clusters)]),
        }
        exchanges: list[Exchange] = []
        for attempt in range(1, self.max_attempts + 1):
            if attempt > 1:
                self.sleep(min(self.retry_backoff_s * 2 ** (attempt - 2), MAX_BACKOFF_S))
            exchange, reply = self._attempt(attempt, messages, request)
            exchanges.append(exchange)
            if reply is not None:
                self.summary = append_entry(self.summary, evidence.iteration, reply.summary)
                return Proposal(
                    deltas=reply.deltas, summary=reply.summary, exchanges=tuple(exchanges),
                    metrics=_usage_metrics(exchanges),
                )
            logger.warning("reflector attempt %d/%d rejected: %s",
                           attempt, self.max_attempts, exchange.error)
        return Proposal(
            deltas=None,
            error=f"no valid reply in {self.max_attempts} attempts; last: {exchanges[-1].error}",
            exchanges=tuple(exchanges),
            metrics=_usage_metrics(exchanges),
        )

    def _attempt(self, attempt: int, messages: list[dict[str, str]], request: dict[str, Any]):
        started = time.perf_counter()
        try:
            raw = self.client.chat.completions.with_raw_response.create(
                messages=messages, **request)
            http = HttpReply(raw.status_code, raw.headers.get("content-type", ""),
                             raw.http_response.content)
        except Exception as error:  # noqa: BLE001 - any transport/HTTP failure is an attempt
            reason = printable(f"request failed: {type(error).__name__}: {error}", 4000)
            return Exchange(
                attempt=attempt, messages=messages, request=request, raw_reply=None,
                error=self.redactor.text(reason), latency_s=time.perf_counter() - started,
            ), None
        outcome = read_reply(http, n_clusters=self.n_clusters, clamp=self.clamp,
                             max_summary_chars=self.max_summary_chars)
        reply = outcome.reply
        if reply is not None:
            reply = type(reply)(deltas=reply.deltas, summary=self.redactor.text(reply.summary))
        error = None if outcome.error is None else self.redactor.text(outcome.error)
        return Exchange(
            attempt, messages, request, self.redactor.text(outcome.raw_reply), error,
            time.perf_counter() - started, outcome.prompt_tokens, outcome.completion_tokens,
        ), reply

    def state_dict(self) -> dict[str, Any]:
        """The evolving summary entries."""
        return {"summary": [[entry.iteration, entry.text] for entry in self.summary]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore the evolving summary."""
        self.summary = [SummaryEntry(int(i), str(text)) for i, text in state.get("summary", [])]

    @property
    def summary_text(self) -> str:
        """The accumulated summary as served to the reflector."""
        return render_summary(self.summary)


def _client_secrets(client: Any) -> list[str]:
    """The key a client sends and the password of its base URL (as servers may echo them)."""
    found = [getattr(client, "api_key", None), getattr(getattr(client, "base_url", None),
                                                        "password", None)]
    return [value for value in found if isinstance(value, str) and value]


def _usage_metrics(exchanges: list[Exchange]) -> dict[str, float]:
    prompt = sum(exchange.prompt_tokens for exchange in exchanges)
    completion = sum(exchange.completion_tokens for exchange in exchanges)
    return {
        "reflector_prompt_tokens": float(prompt),
        "reflector_completion_tokens": float(completion),
        "reflector_total_tokens": float(prompt + completion),
        "reflector_latency_s": sum(exchange.latency_s for exchange in exchanges),
        "reflector_attempts": float(len(exchanges)),
    }
