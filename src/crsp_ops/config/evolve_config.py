"""Settings of the evolution loop and its proposers (declared in defaults/kconfig/evolve.kconfig).

Kconfig is the one home of every default and help text; these frozen dataclasses carry the
types, float bounds and the cross-field checks, which raise ``ValueError`` naming the fix.
"""

from __future__ import annotations

from dataclasses import dataclass

from crsp_ops.config.fields import bounded

PROPOSERS = ("auto", "reflector", "optuna", "offline")


def parse_pool_indices(text: str) -> tuple[int, ...] | None:
    """``"all"`` → ``None``; ``"0, 3,7"`` → ``(0, 3, 7)``.

    >>> parse_pool_indices("all"), parse_pool_indices("2,0")
    (None, (2, 0))
    """
    if text.strip().lower() == "all":
        return None
    try:
        indices = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ValueError(
            f"evolve.pool_indices={text!r}: use 'all' or comma-separated 0-based integers"
        ) from None
    if not indices or min(indices) < 0 or len(set(indices)) != len(indices):
        raise ValueError(
            f"evolve.pool_indices={text!r}: need distinct non-negative indices, or 'all'"
        )
    return indices


def parse_cluster_ranges(text: str) -> dict[str, tuple[float, float]]:
    """``"0:-1:2, 3:-0.5:0.5"`` → ``{"0": (-1.0, 2.0), "3": (-0.5, 0.5)}``.

    >>> parse_cluster_ranges("0:-1:2")
    {'0': (-1.0, 2.0)}
    """
    out: dict[str, tuple[float, float]] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        try:
            cluster, low, high = item.split(":")
            key, bounds = str(int(cluster)), (float(low), float(high))
        except ValueError:
            raise ValueError(
                f"optuna.cluster_ranges item {item!r}: write id:low:high, e.g. 0:-1:2"
            ) from None
        if not bounds[0] < bounds[1]:
            raise ValueError(f"optuna.cluster_ranges item {item!r}: low must be < high")
        out[key] = bounds
    return out


@dataclass(frozen=True)
class EvolveSettings:
    """The ``evolve`` section: pool, minibatch, iterations, outputs, registry."""

    iterations: int
    minibatch_size: int
    pool_indices: str  # "all" | "0,3,7"
    seed: int
    proposer: str  # "auto" | "reflector" | "optuna" | "offline"
    on_proposal_failure: str  # "continue" | "stop"
    delta_clamp: float = bounded(0.0, 1000.0)
    heldout_size: int
    paired_best: bool
    max_lost_correct: int
    acceptance: str  # "composite" | "shorter"
    frontier: bool
    offline_step: float = bounded(0.0, 100.0, open_low=True)
    offline_max_step: float = bounded(0.0, 100.0)  # 0: the step is not capped
    offline_eos_up_only: bool  # the EOS cluster never goes down
    offline_length_contrast: str  # "share" | "excess"
    registry_enabled: bool
    registry_model_name: str
    registry_alias: str

    def __post_init__(self) -> None:
        parse_pool_indices(self.pool_indices)
        if not self.registry_model_name.strip():
            raise ValueError("evolve.registry_model_name is empty: name the registered model")
        if not self.registry_alias.strip():
            raise ValueError("evolve.registry_alias is empty: e.g. champion")

    @property
    def pool_index_list(self) -> tuple[int, ...] | None:
        """The explicit pool indices, or ``None`` for the whole pool."""
        return parse_pool_indices(self.pool_indices)

    @property
    def clamp(self) -> float | None:
        """The clamp passed to delta validation (``None`` when 0)."""
        return self.delta_clamp or None


@dataclass(frozen=True)
class ReflectorSettings:
    """The ``reflector`` section: the OpenAI-compatible reflector LLM."""

    base_url: str  # "" = no endpoint configured
    model: str
    api_key_env: str  # the variable's name; the key is never configuration
    timeout_s: float = bounded(0.0, 3600.0, open_low=True)
    max_attempts: int
    retry_backoff_s: float = bounded(0.0, 600.0)
    temperature: float = bounded(0.0, 2.0)
    max_tokens: int
    k_longest: int
    max_response_chars: int
    context_tokens: int  # 0 = as the server reports it
    tokenizer: str  # "" = the server's /tokenize, else an estimate

    def __post_init__(self) -> None:
        if not self.api_key_env.strip() or not self.api_key_env.replace("_", "").isalnum():
            raise ValueError(
                f"reflector.api_key_env={self.api_key_env!r}: name an environment variable "
                "(e.g. OPENAI_API_KEY), never the key itself"
            )


@dataclass(frozen=True)
class OptunaSettings:
    """The ``optuna`` section: the Optuna baseline proposer."""

    sampler: str  # "tpe" | "cmaes" | "random"
    seed: int
    delta_low: float = bounded(-1000.0, 1000.0)
    delta_high: float = bounded(-1000.0, 1000.0)
    cluster_ranges: str  # "id:low:high,..."
    storage: str  # "" | RDB URL | "journal:<path>"
    study_name: str
    n_trials: int  # trial budget shared by the study's workers (0: none)
    worker: int  # this worker's index: seed offset, run name, trial attrs

    def __post_init__(self) -> None:
        if not self.delta_low < self.delta_high:
            raise ValueError(
                f"optuna.delta_low={self.delta_low} must be < optuna.delta_high={self.delta_high}"
            )
        parse_cluster_ranges(self.cluster_ranges)
        if not self.study_name.strip():
            raise ValueError("optuna.study_name is empty: name the study")
