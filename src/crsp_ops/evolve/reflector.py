"""The reflector proposer: an OpenAI-compatible LLM proposes deltas with structured outputs.

One bounded loop here retries transport errors and invalid replies alike (the client's own
retries are off), records every attempt, and never adopts invalid deltas.

Design: docs/design/evolve.md#reflector.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

from crsp_ops import openai_client
from crsp_ops.config import ConfigError
from crsp_ops.evolve.iteration import Evidence, Exchange, Proposal
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.reflector_context import PromptTooLong, estimate_tokens, fit_prompt
from crsp_ops.evolve.reflector_prompt import (
    SummaryEntry,
    append_entry,
    build_messages,
    render_summary,
    select_responses,
)
from crsp_ops.evolve.reflector_reply import HttpReply, printable, read_reply
from crsp_ops.evolve.reflector_schema import MAX_SUMMARY_CHARS, response_format
from crsp_ops.evolve.reflector_server import PromptFit
from crsp_ops.evolve.strict_json import InvalidJSON, loads
from crsp_ops.openai_client import resolve_endpoint
from crsp_ops.tracking.redaction import Redactor

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 30.0
REFUSED_STATUSES = (400, 404, 422)  # the request itself is wrong: the same one fails again


class ReflectorRefused(ConfigError):
    """The server refused the request as malformed, or the prompt cannot fit its context."""


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
        prompt_fit: the prompt budget and token count (``reflector_server.prompt_fit``;
            default: prompts are sent as built).
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
        prompt_fit: PromptFit | None = None,
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
        self.prompt_fit = prompt_fit
        self.sleep = sleep
        self.summary: list[SummaryEntry] = []

    def propose(self, evidence: Evidence) -> Proposal:
        """Send the four inputs (fitted to the context); retry invalid replies; keep the summary.

        Raises:
            ReflectorRefused: the server refused a request as malformed, or the prompt does
                not fit the reflector's context even after every cut.
        """
        messages, fit_metrics = self._messages(evidence)
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
                    metrics={**_usage_metrics(exchanges), **fit_metrics},
                )
            logger.warning("reflector attempt %d/%d rejected: %s",
                           attempt, self.max_attempts, exchange.error)
        return Proposal(
            deltas=None,
            error=f"no valid reply in {self.max_attempts} attempts; last: {exchanges[-1].error}",
            exchanges=tuple(exchanges),
            metrics={**_usage_metrics(exchanges), **fit_metrics},
        )

    def _messages(self, evidence: Evidence) -> tuple[list[dict[str, str]], dict[str, float]]:
        """The request's messages, cut by ``fit_prompt`` when a budget is known; its metrics."""
        shown = select_responses(evidence.records, k_longest=self.k_longest)

        def render(records, entries, chars):
            return build_messages(
                cluster_descriptions=evidence.cluster_descriptions, deltas=evidence.deltas,
                summary=render_summary(list(entries)), records=records, k_longest=0,
                max_response_chars=chars, frontier_lessons=evidence.frontier_lessons)

        fit = self.prompt_fit
        if fit is None or fit.budget is None or fit.count is None:
            return render(shown, self.summary, self.max_response_chars), {}
        try:
            fitted = fit_prompt(shown, self.summary, render=render, count=self._counter(fit),
                                budget=fit.budget, lengths=[r.response_tokens for r in shown],
                                max_response_chars=self.max_response_chars)
        except PromptTooLong as error:
            raise ReflectorRefused(
                f"reflector: {error} (context {fit.context_tokens} - reflector.max_tokens "
                f"{self.max_tokens}, counted by {fit.count_source}): lower reflector.max_tokens "
                "or serve a model with a longer context") from None
        if fitted.cut:
            logger.warning(
                "iteration %d: reflector prompt cut to %d tokens (budget %d): dropped %d of %d "
                "responses (shortest first) and %d of %d summary entries (oldest first), "
                "responses capped at %d characters", evidence.iteration, fitted.tokens,
                fitted.budget, fitted.dropped_responses, len(shown),
                fitted.dropped_summary_entries, len(self.summary), fitted.response_chars)
        return fitted.messages, {
            "reflector_prompt_tokens_counted": float(fitted.tokens),
            "reflector_prompt_budget": float(fitted.budget),
            "reflector_prompt_cut": float(fitted.cut),
            "reflector_prompt_dropped_responses": float(fitted.dropped_responses),
            "reflector_prompt_dropped_summary_entries": float(fitted.dropped_summary_entries),
        }

    def _counter(self, fit: PromptFit):
        """``fit.count``, falling back to the estimate when it fails (e.g. a lost route)."""

        def count(messages: list[dict[str, str]]) -> int:
            try:
                return fit.count(messages)
            except Exception as error:  # noqa: BLE001 - the estimate is conservative
                logger.warning("reflector: counting by %s failed (%s); estimating instead",
                               fit.count_source, self.redactor.text(str(error))[:200])
                return estimate_tokens(messages)

        return count

    def _attempt(self, attempt: int, messages: list[dict[str, str]], request: dict[str, Any]):
        started = time.perf_counter()
        try:
            raw = self.client.chat.completions.with_raw_response.create(
                messages=messages, **request)
            http = HttpReply(raw.status_code, raw.headers.get("content-type", ""),
                             raw.http_response.content)
        except Exception as error:  # noqa: BLE001 - any transport/HTTP failure is an attempt
            if getattr(error, "status_code", None) in REFUSED_STATUSES:
                raise self._refused(error.status_code, error.response.content) from None
            reason = printable(f"request failed: {type(error).__name__}: {error}", 4000)
            return Exchange(
                attempt=attempt, messages=messages, request=request, raw_reply=None,
                error=self.redactor.text(reason), latency_s=time.perf_counter() - started,
            ), None
        if http.status in REFUSED_STATUSES:
            raise self._refused(http.status, http.body)
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

    def _refused(self, status: int, body: bytes) -> ReflectorRefused:
        """The one-line error of a refused request: the server's message and the likely fix."""
        message = _server_message(body)
        lowered = message.lower()
        if status == 404 or "does not exist" in lowered:
            fix = f"check reflector.model ({self.model!r}) and reflector.base_url"
        elif any(word in lowered for word in ("context", "too long", "max_model_len")):
            fix = ("the prompt is over the model's context: set reflector.context_tokens or "
                   "lower reflector.max_tokens")
        else:
            fix = "the server may not support response_format json_schema (structured outputs)"
        line = " ".join(f"reflector: the server refused the request (HTTP {status}: "
                        f"{message[:300]}): {fix}".split())
        return ReflectorRefused(self.redactor.text(line))

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


def reply_validity(history: Sequence[Any]) -> tuple[int, int]:
    """(valid replies, requests) of the reflector over history rows (``proposer_metrics``).

    >>> from types import SimpleNamespace as Row
    >>> reply_validity([Row(proposer_metrics={"reflector_attempts": 3.0,
    ...                                       "reflector_invalid_replies": 2.0}),
    ...                 Row(proposer_metrics={})])
    (1, 3)
    """
    metrics = [row.proposer_metrics for row in history]
    requests = sum(m.get("reflector_attempts", 0.0) for m in metrics)
    invalid = sum(m.get("reflector_invalid_replies", 0.0) for m in metrics)
    return int(requests - invalid), int(requests)


def _server_message(body: bytes) -> str:
    """The ``message`` of an OpenAI- or vLLM-style error body, else the body's text."""
    text = printable(body[:4096].decode("utf-8", "replace"), 4096)
    try:
        data = loads(text, max_chars=4096)
    except InvalidJSON:
        return text
    inner = data.get("error", data) if isinstance(data, dict) else None
    found = inner.get("message") if isinstance(inner, dict) else None
    return found if isinstance(found, str) else text


def _usage_metrics(exchanges: list[Exchange]) -> dict[str, float]:
    prompt = sum(exchange.prompt_tokens for exchange in exchanges)
    completion = sum(exchange.completion_tokens for exchange in exchanges)
    return {
        "reflector_prompt_tokens": float(prompt),
        "reflector_completion_tokens": float(completion),
        "reflector_total_tokens": float(prompt + completion),
        "reflector_latency_s": sum(exchange.latency_s for exchange in exchanges),
        "reflector_attempts": float(len(exchanges)),
        "reflector_invalid_replies": float(sum(e.error is not None for e in exchanges)),
    }
