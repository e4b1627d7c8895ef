"""Typed, validated settings: one frozen dataclass per Kconfig section.

Fields carry types and float bounds only; their defaults live in the Kconfig file (the single
home of defaults), so every Settings object is built by ``crsp_ops.config.load_settings``.
The sections of the data, model and tracking stages are here; those of steering, evolution and
CRSP in their own modules of this package; ``Settings`` composes them all.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, get_type_hints

from crsp_ops.config.engine_checks import COLOCATED_BACKEND, check_colocated_engine
from crsp_ops.config.errors import ConfigError
from crsp_ops.config.evolve_config import EvolveSettings, OptunaSettings, ReflectorSettings
from crsp_ops.config.fields import bounded
from crsp_ops.config.selfplay_config import (
    CrspSettings,
    RewardSettings,
    SeedingSettings,
    TrainSettings,
)
from crsp_ops.config.steering_config import (
    ClustersSettings,
    DeltasSettings,
    GenerationSettings,
    ScoringSettings,
)


@dataclass(frozen=True)
class LimoSettings:
    """Where the LIMO trajectories come from."""

    source: str  # "synthetic" | "hub:<id>" | path to .jsonl/.json/.parquet
    hub_split: str
    hub_revision: str  # "" = default branch
    n_synthetic: int
    seed: int


@dataclass(frozen=True)
class FinanceBenchSettings:
    """The FinanceBench-format pool and its held-out split."""

    source: str  # "synthetic" | path to a FinanceBench JSONL file
    n_synthetic: int
    heldout_size: int
    prompt_template: str  # with {evidence} and {question}; "\\n" stands for a newline
    seed: int
    synthetic_max_revenue: int  # USD millions: the largest synthetic revenue (figure scale)

    def __post_init__(self) -> None:
        missing = [f for f in ("{question}",) if f not in self.prompt_template]
        if missing:
            raise ConfigError(
                f"financebench.prompt_template = {self.prompt_template!r}: must contain {missing}"
            )

    @property
    def user_template(self) -> str:
        """The template with each two-character escape backslash-n turned into a newline."""
        return self.prompt_template.replace("\\n", "\n")


@dataclass(frozen=True)
class ModelSettings:
    """The base model: a tiny self-trained model or an existing HF directory."""

    source: str  # "tiny" | path to an HF model directory
    device: str  # "auto" | "cpu" | "cuda"
    dtype: str  # "auto" (as loaded) | "fp32" | "bf16" | "fp16": see crsp.policy.precision
    hub_download: bool  # fetch a Hub id missing from the local HF cache (never when offline)
    tiny_hidden_size: int
    tiny_layers: int
    tiny_heads: int
    tiny_kv_heads: int
    tiny_intermediate_size: int
    tiny_vocab_size: int
    tiny_max_seq_len: int
    tiny_train_steps: int
    tiny_batch_size: int
    tiny_learning_rate: float = bounded(0.0, 1.0, open_low=True)
    tiny_warmup_steps: int
    tiny_weight_decay: float = bounded(0.0, 1.0)
    tiny_padded_fraction: float = bounded(0.0, 1.0)
    tiny_max_padding_phrases: int
    tiny_solve_examples: int
    tiny_quote_evidence: bool
    tiny_seed: int

    def __post_init__(self) -> None:
        if self.tiny_heads % self.tiny_kv_heads:
            raise ConfigError(
                f"model.tiny_kv_heads={self.tiny_kv_heads} must divide "
                f"model.tiny_heads={self.tiny_heads}"
            )
        if self.tiny_warmup_steps > self.tiny_train_steps:
            raise ConfigError(
                f"model.tiny_warmup_steps={self.tiny_warmup_steps} exceeds "
                f"model.tiny_train_steps={self.tiny_train_steps}"
            )
        if self.tiny_hidden_size % self.tiny_heads:
            raise ConfigError(
                f"model.tiny_heads={self.tiny_heads} must divide "
                f"model.tiny_hidden_size={self.tiny_hidden_size}"
            )


@dataclass(frozen=True)
class TrackingSettings:
    """MLflow tracking."""

    enabled: bool
    uri: str  # "" means sqlite:///<project root>/mlflow.db
    experiment_prefix: str
    flush_points: int
    flush_seconds: float = bounded(0.0, 3600.0)
    retry_seconds: float = bounded(0.0, 86400.0)
    system_metrics: bool


@dataclass(frozen=True)
class Settings:
    """The effective configuration of one run."""

    limo: LimoSettings
    financebench: FinanceBenchSettings
    model: ModelSettings
    clusters: ClustersSettings
    deltas: DeltasSettings
    generation: GenerationSettings
    scoring: ScoringSettings
    evolve: EvolveSettings
    reflector: ReflectorSettings
    optuna: OptunaSettings
    crsp: CrspSettings
    seeding: SeedingSettings
    reward: RewardSettings
    train: TrainSettings
    tracking: TrackingSettings

    def __post_init__(self) -> None:
        generation = self.generation
        if generation.backend == COLOCATED_BACKEND:  # a machine check: vLLM, memory, knobs
            check_colocated_engine(
                memory_fraction=generation.memory_fraction,
                sleep_mode=generation.vllm_sleep_mode, device=self.model.device,
                temperatures={"train.temperature": self.train.temperature,
                              "generation.temperature": generation.temperature})

    def flat(self) -> dict[str, Any]:
        """``{"section.key": value}`` for every option, in declaration order."""
        out: dict[str, Any] = {}
        for section in fields(self):
            values = getattr(self, section.name)
            for item in fields(values):
                out[f"{section.name}.{item.name}"] = getattr(values, item.name)
        return out


SECTION_TYPES: dict[str, type] = get_type_hints(Settings)
