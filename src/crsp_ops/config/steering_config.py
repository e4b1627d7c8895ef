"""Settings of clusters, generation and scoring (declared in defaults/kconfig/steering.kconfig).

Defaults live in Kconfig only; these dataclasses carry types, float bounds and cross-field
checks. Errors name the option to change.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.fields import bounded

_OVERRIDE = re.compile(r"^\s*(\d+)\s*=\s*(\S+)\s*$")
# Arguments of ``apply_chat_template`` the backends set themselves: not template variables.
RESERVED_TEMPLATE_KWARGS = frozenset({
    "messages", "conversation", "tokenize", "add_generation_prompt", "continue_final_message",
    "chat_template", "tools", "documents", "return_dict", "return_tensors",
})


def parse_delta_overrides(items: tuple[str, ...]) -> dict[str, float]:
    """Parse ``("0=-0.5", "1=0.25")`` into ``{"0": -0.5, "1": 0.25}``.

    Raises:
        ConfigError: an item that is not ``ID=VALUE`` with an integer id and a finite float.

    >>> parse_delta_overrides(("0=-0.5", " 3 = 2"))
    {'0': -0.5, '3': 2.0}
    """
    out: dict[str, float] = {}
    for item in items:
        match = _OVERRIDE.match(item)
        try:
            value = float(match.group(2)) if match else float("nan")
        except ValueError:
            value = float("nan")
        if match is None or value != value or value in (float("inf"), float("-inf")):
            raise ConfigError(
                f"deltas.overrides: {item!r} must be ID=VALUE with an integer cluster id and a "
                "finite float, e.g. 0=-0.5"
            )
        out[str(int(match.group(1)))] = value
    return out


def parse_template_kwargs(text: str) -> dict[str, Any]:
    """Parse ``generation.chat_template_kwargs`` (a JSON object, "" = none).

    Raises:
        ConfigError: not JSON, not an object, or a key the backends pass themselves.

    >>> parse_template_kwargs('{"enable_thinking": false}'), parse_template_kwargs("")
    ({'enable_thinking': False}, {})
    """
    if not text.strip():
        return {}
    example = '{"enable_thinking": false}'
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise ConfigError(f"generation.chat_template_kwargs={text!r} is not JSON ({error}): "
                          f"write a JSON object such as {example}") from None
    if not isinstance(value, dict):
        raise ConfigError(f"generation.chat_template_kwargs={text!r} must be a JSON object "
                          f"such as {example}")
    reserved = sorted(RESERVED_TEMPLATE_KWARGS & set(value))
    if reserved:
        raise ConfigError(f"generation.chat_template_kwargs sets {reserved}, which the backends "
                          "set themselves: leave them out")
    return value


@dataclass(frozen=True)
class ClustersSettings:
    """The ``clusters`` section: token embedding, PCA and k-means."""

    embedder: str  # sentence-transformers name or path; MiniLM names load the packaged copy
    n_kmeans_clusters: int  # K: table ids are 0 (EOS), 1 (numeric), 2 .. K+1
    pca_dim: int  # PCA components kept before k-means
    seed: int  # random state of PCA and k-means
    device: str  # "auto" | "cpu" | "cuda" (no silent fallback)
    batch_size: int  # token texts per embedder call
    minibatch_threshold: int  # MiniBatchKMeans above this many clustered tokens
    n_representatives: int  # tokens listed per cluster in cluster_descriptions.json

    def __post_init__(self) -> None:
        if not self.embedder.strip():
            raise ConfigError("clusters.embedder is empty: name a sentence-transformers model")

    @property
    def n_clusters(self) -> int:
        """Total cluster ids (K + 2): the length of every deltas vector."""
        return self.n_kmeans_clusters + 2


@dataclass(frozen=True)
class DeltasSettings:
    """The ``deltas`` section: the initial per-cluster deltas."""

    default: float = bounded(-1.0e4, 1.0e4)  # delta of every cluster not set otherwise
    file: str  # JSON deltas replacing ``default`` ("" = none)
    overrides: tuple[str, ...]  # "ID=VALUE" items applied last
    clamp: float = bounded(0.0, 1.0e4)  # clip to [-clamp, clamp] when > 0

    def __post_init__(self) -> None:
        parse_delta_overrides(self.overrides)  # fail at load time, naming the option

    @property
    def clamp_or_none(self) -> float | None:
        """The clamp as ``validate_deltas`` takes it (``None`` when off)."""
        return self.clamp if self.clamp > 0 else None

    @property
    def override_values(self) -> dict[str, float]:
        """``overrides`` parsed into ``{cluster id: delta}``."""
        return parse_delta_overrides(self.overrides)


@dataclass(frozen=True)
class GenerationSettings:
    """The ``generation`` section: in-process transformers or an OpenAI-compatible server."""

    backend: str  # "transformers" | "openai_server" | "vllm_colocate" (config.engine_checks)
    engine: str  # "vllm" | "sglang" | "local" (the project's server) | "openai" (no steering)
    vllm_runner: str  # "auto" | "v1" | "v2": vLLM model runner of a started server
    base_url: str  # OpenAI API root (with /v1)
    served_model: str  # model name sent with requests ("" = the model directory path)
    api_key_env: str  # env var holding the server key ("" = dummy key)
    server_command: str  # "" = already running (engine=local: ours); else a command line
    memory_fraction: float = bounded(0.0, 1.0, open_low=True)  # {memory_fraction} of a command
    vllm_sleep_mode: bool  # vllm_colocate: release weights and KV cache between generations
    health_path: str  # GET path on the server root
    startup_timeout_s: float = bounded(0.0, 86400.0, open_low=True)
    server_max_restarts: int  # restarts of a started server that died
    server_log: str  # log file of a started server ("" = a temporary file)
    canary: bool  # prove a server steers before trusting it
    max_concurrency: int  # requests in flight
    request_timeout_s: float = bounded(0.0, 86400.0, open_low=True)
    max_new_tokens: int  # response length bound
    temperature: float = bounded(0.0, 100.0)  # 0 = greedy
    top_p: float = bounded(0.0, 1.0, open_low=True)  # 1 = off
    top_k: int  # 0 = off
    min_p: float = bounded(0.0, 1.0)  # 0 = off
    repetition_penalty: float = bounded(0.0, 100.0, open_low=True)  # 1 = off
    chat_template_kwargs: str  # JSON object of chat-template variables ("" = none)
    seed: int  # sampling seed
    batch_size: int  # in-process conversations per generate() call
    dtype: str  # in-process torch dtype name or "auto"

    def __post_init__(self) -> None:
        if not self.health_path.startswith("/"):
            raise ConfigError(
                f"generation.health_path={self.health_path!r} must start with '/', e.g. /health"
            )
        if self.backend == "openai_server" and not self.base_url.startswith(("http://",
                                                                            "https://")):
            raise ConfigError(
                f"generation.base_url={self.base_url!r} must be an http(s) URL such as "
                "http://127.0.0.1:8000/v1"
            )
        parse_template_kwargs(self.chat_template_kwargs)  # fail at load time, naming the option

    @property
    def template_kwargs(self) -> dict[str, Any]:
        """``chat_template_kwargs`` parsed: the variables every chat template render gets."""
        return parse_template_kwargs(self.chat_template_kwargs)


@dataclass(frozen=True)
class ScoringSettings:
    """The ``scoring`` section: correctness grading and the composite score."""

    shortness_scale: float = bounded(0.0, 1.0e9, open_low=True)  # tokens at shortness 0.5
    shortness_weight: float = bounded(0.0, 1.0)
    correctness_weight: float = bounded(0.0, 1.0)
    correctness: str  # "numeric" | "llm_judge"
    rel_tol: float = bounded(0.0, 1.0)  # numeric tolerance
    judge_base_url: str  # "" = the OpenAI API
    judge_model: str
    judge_api_key_env: str
    judge_timeout_s: float = bounded(0.0, 3600.0, open_low=True)

    def __post_init__(self) -> None:
        if self.shortness_weight + self.correctness_weight <= 0:
            raise ConfigError(
                "scoring.shortness_weight and scoring.correctness_weight are both 0: "
                "give at least one a positive weight"
            )
        if self.correctness == "llm_judge" and not self.judge_model.strip():
            raise ConfigError("scoring.correctness=llm_judge needs scoring.judge_model")
