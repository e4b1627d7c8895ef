"""The request fields each engine needs to return trainable rollouts, so no caller forgets one.

:func:`rollout_request_options` returns them per engine, with what the returned logprobs mean
(``LogprobSemantics``) and the sampling extras each engine honours.

Design: docs/design/inference.md#request_options.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from crsp_ops.inference.completions import LogprobSemantics

Engine = Literal["vllm", "sglang", "openai"]
ENGINES: tuple[str, ...] = ("vllm", "sglang", "openai")

_VLLM_LOGPROBS_MODE = {"raw": "raw_logprobs", "processed": "processed_logprobs"}

SAMPLING_EXTRAS: tuple[str, ...] = ("top_k", "min_p", "repetition_penalty",
                                    "chat_template_kwargs")
"""Request fields beyond the OpenAI API that carry sampling and chat-template settings."""
ENGINE_SAMPLING_EXTRAS: Mapping[str, frozenset[str] | None] = MappingProxyType({
    # ChatCompletionRequest fields of vLLM 0.32.0 and SGLang 0.5.23 (the project's own server
    # speaks vLLM's and takes them too)
    "vllm": frozenset(SAMPLING_EXTRAS),
    "sglang": frozenset(SAMPLING_EXTRAS),
    # any other server: not known either way. The fields are sent as configured; such a server
    # honours them, rejects the request (a 400, as OpenAI's own API does), or, as vLLM does
    # with fields it does not know, ignores them with a log line.
    "openai": None,
})
"""Which of ``SAMPLING_EXTRAS`` each engine honours (``None``: unknown, sent anyway)."""


@dataclass(frozen=True)
class RolloutRequestOptions:
    """What one engine must be asked for (and launched with) to return trainable rollouts."""

    engine: Engine
    standard_fields: Mapping[str, Any]  # OpenAI chat fields: logprobs=True
    extra_body: Mapping[str, Any]  # engine-specific fields sent through the SDK's extra_body
    logprob_semantics: LogprobSemantics  # which distribution the returned logprobs come from
    server_args: tuple[str, ...] = ()  # launch flags that make logprob_semantics hold
    returns_token_ids: bool = False  # choice carries engine token ids (no string round trip)
    returns_prompt_token_ids: bool = False  # the server reports the prompt ids it used
    notes: str = field(default="", compare=False)  # one-line caveat for logs

    def create_kwargs(self, extra_body: Mapping[str, Any] | None = None, **fields: Any) -> dict:
        """Keyword arguments for ``client.chat.completions.create``.

        Args:
            extra_body: caller's engine fields (e.g. steering ``vllm_xargs``); merged over ours,
                except that a caller may not switch off a field rollouts need.
            **fields: any other standard fields (``model``, ``messages``, ``temperature``...).

        Raises:
            ValueError: the caller's fields would disable something rollouts need.
        """
        for source in (fields, extra_body or {}):
            for key, needed in {**self.standard_fields, **self.extra_body}.items():
                if key in source and source[key] != needed:
                    raise ValueError(
                        f"{key}={source[key]!r} would break rollouts on {self.engine}; "
                        f"they need {key}={needed!r}"
                    )
        merged_body = {**self.extra_body, **(extra_body or {})}
        kwargs = {**fields, **self.standard_fields}
        if merged_body:
            kwargs["extra_body"] = merged_body
        return kwargs


def rollout_request_options(
    engine: str, logprob_semantics: LogprobSemantics | None = None
) -> RolloutRequestOptions:
    """Request fields, launch flags and logprob semantics for rollouts from ``engine``.

    Args:
        engine: ``vllm``, ``sglang`` or ``openai`` (any other OpenAI-compatible server).
        logprob_semantics: the semantics wanted; ``None`` takes the engine's default. Only
            vLLM can switch (through ``--logprobs-mode``); asking another engine for semantics it
            cannot give raises.

    Raises:
        ValueError: unknown engine, or semantics the engine cannot return.
    """
    if engine not in ENGINES:
        raise ValueError(f"unknown engine {engine!r}; expected one of {ENGINES}")
    logprobs_only = MappingProxyType({"logprobs": True})
    if engine == "vllm":
        semantics = logprob_semantics or "raw"
        if semantics not in _VLLM_LOGPROBS_MODE:
            raise ValueError(f"vLLM returns 'raw' or 'processed' logprobs, not {semantics!r}")
        return RolloutRequestOptions(
            engine="vllm",
            standard_fields=logprobs_only,
            extra_body=MappingProxyType({
                # choices[i].token_ids and top-level prompt_token_ids (vLLM >= 0.10.2)
                "return_token_ids": True,
                # logprobs.content[].token becomes "token_id:N": exact even without token_ids
                "return_tokens_as_token_ids": True,
            }),
            logprob_semantics=semantics,
            server_args=("--logprobs-mode", _VLLM_LOGPROBS_MODE[semantics]),
            returns_token_ids=True,
            returns_prompt_token_ids=True,
            notes="prompt_token_ids is on the response, not the choice: pass it explicitly",
        )
    if engine == "sglang":
        _require(engine, logprob_semantics, "processed")
        return RolloutRequestOptions(
            engine="sglang",
            standard_fields=logprobs_only,
            extra_body=MappingProxyType({
                # choices[i].response_token_ids (SGLang 0.5.23; token_ids in older releases),
                # non-streaming only
                "return_token_ids": True,
                "return_prompt_token_ids": True,  # choices[i].prompt_token_ids
            }),
            logprob_semantics="processed",
            returns_token_ids=True,
            returns_prompt_token_ids=True,
            notes="logprobs include the steering bias and temperature",
        )
    _require(engine, logprob_semantics, "processed")
    return RolloutRequestOptions(
        engine="openai",
        standard_fields=logprobs_only,
        extra_body=MappingProxyType({}),
        logprob_semantics="processed",
        notes="no token ids: tokens are recovered from logprob strings; prompt alignment unchecked",
    )


def unsupported_extras(engine: str, fields: Iterable[str]) -> list[str]:
    """The ``SAMPLING_EXTRAS`` among ``fields`` that ``engine`` is known not to honour.

    >>> unsupported_extras("vllm", ["top_k", "chat_template_kwargs"])
    []
    """
    honoured = ENGINE_SAMPLING_EXTRAS.get(engine)
    if honoured is None:
        return []
    return [name for name in fields if name in SAMPLING_EXTRAS and name not in honoured]


def _require(engine: str, wanted: LogprobSemantics | None, available: LogprobSemantics) -> None:
    if wanted is not None and wanted != available:
        raise ValueError(f"{engine} returns {available!r} logprobs only, not {wanted!r}")
