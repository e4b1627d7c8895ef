"""Typed, validated settings: one frozen dataclass per Kconfig section.

Fields carry types and float bounds only; their defaults live in the Kconfig file (the single
home of defaults), so every Settings object is built by ``crsp_ops.config.load_settings``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, get_type_hints

from crsp_ops.config.errors import ConfigError


def bounded(low: float | None = None, high: float | None = None, *, open_low: bool = False):
    """A dataclass field whose float value must lie in ``[low, high]`` (``(low, high]`` if open)."""
    return field(metadata={"low": low, "high": high, "open_low": open_low})


@dataclass(frozen=True)
class LimoSettings:
    """Where the LIMO trajectories come from."""

    source: str  # "synthetic" | "hub:<id>" | path to .jsonl/.json/.parquet
    hub_split: str
    n_synthetic: int
    seed: int


@dataclass(frozen=True)
class FinanceBenchSettings:
    """The FinanceBench-format pool and its held-out split."""

    source: str  # "synthetic" | path to a FinanceBench JSONL file
    n_synthetic: int
    heldout_size: int
    seed: int


@dataclass(frozen=True)
class ModelSettings:
    """The base model: a tiny self-trained model or an existing HF directory."""

    source: str  # "tiny" | path to an HF model directory
    device: str  # "auto" | "cpu" | "cuda"
    tiny_hidden_size: int
    tiny_layers: int
    tiny_heads: int
    tiny_intermediate_size: int
    tiny_vocab_size: int
    tiny_max_seq_len: int
    tiny_train_steps: int
    tiny_batch_size: int
    tiny_learning_rate: float = bounded(0.0, 1.0, open_low=True)
    tiny_seed: int

    def __post_init__(self) -> None:
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
    system_metrics: bool


@dataclass(frozen=True)
class Settings:
    """The effective configuration of one run."""

    limo: LimoSettings
    financebench: FinanceBenchSettings
    model: ModelSettings
    tracking: TrackingSettings

    def flat(self) -> dict[str, Any]:
        """``{"section.key": value}`` for every option, in declaration order."""
        out: dict[str, Any] = {}
        for section in fields(self):
            values = getattr(self, section.name)
            for item in fields(values):
                out[f"{section.name}.{item.name}"] = getattr(values, item.name)
        return out


SECTION_TYPES: dict[str, type] = get_type_hints(Settings)
