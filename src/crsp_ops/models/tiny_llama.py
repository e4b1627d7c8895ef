"""Build and train the tiny Llama-style causal LM on tokenised chat samples (CPU-friendly).

Loss: cross-entropy on assistant tokens only (the reply and its end-of-turn token). With a model
this small, spending capacity on reproducing prompts (evidence passages, questions) would slow
down what matters here: the answer format, copying numbers from the evidence, and stopping.
Schedule: linear warm-up, then cosine decay to 10% of the peak learning rate; AdamW.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.models.chat_batches import TokenizedSample, collate

StepCallback = Callable[[int, dict[str, float]], None]


@dataclass(frozen=True)
class TinyLlamaSpec:
    """Model dimensions (values come from the config)."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    max_seq_len: int  # longest training sequence and max_position_embeddings

    def __post_init__(self) -> None:
        if self.hidden_size % self.num_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be divisible by num_heads "
                f"({self.num_heads})"
            )
        if self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads ({self.num_heads}) must be divisible by num_kv_heads "
                f"({self.num_kv_heads})"
            )


@dataclass(frozen=True)
class TrainSpec:
    """Optimisation settings (values come from the config)."""

    steps: int
    batch_size: int
    learning_rate: float
    warmup_steps: int
    weight_decay: float
    seed: int

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch_size < 1:
            raise ValueError(
                f"steps and batch_size must be >= 1, got {self.steps} and {self.batch_size}"
            )
        if not 0 <= self.warmup_steps <= self.steps:
            raise ValueError(f"warmup_steps must be in [0, steps], got {self.warmup_steps}")
        if self.learning_rate <= 0:
            raise ValueError(f"learning_rate must be > 0, got {self.learning_rate}")


@dataclass(frozen=True)
class TrainResult:
    """What training reports back."""

    final_loss: float  # mean loss over the last min(10, steps) steps
    losses: tuple[float, ...]  # loss per step
    seconds: float
    num_parameters: int


def build_tiny_llama(
    spec: TinyLlamaSpec, *, vocab_size: int, bos_id: int, eos_id: int, pad_id: int, seed: int
) -> LlamaForCausalLM:
    """A randomly initialised Llama with tied embeddings (they dominate a tiny model's size)."""
    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        max_position_embeddings=spec.max_seq_len,
        tie_word_embeddings=True,
        bos_token_id=bos_id,
        eos_token_id=eos_id,
        pad_token_id=pad_id,
    )
    torch.manual_seed(seed)
    return LlamaForCausalLM(config)


def lr_at(step: int, spec: TrainSpec) -> float:
    """Learning rate of 0-based ``step``: linear warm-up then cosine decay to 10% of peak."""
    if step < spec.warmup_steps:
        return spec.learning_rate * (step + 1) / spec.warmup_steps
    progress = (step - spec.warmup_steps) / max(1, spec.steps - spec.warmup_steps)
    return spec.learning_rate * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress)))


def train_causal_lm(
    model: LlamaForCausalLM,
    samples: Sequence[TokenizedSample],
    *,
    spec: TrainSpec,
    pad_id: int,
    on_step: StepCallback | None,
    show_progress: bool,
) -> TrainResult:
    """Train ``model`` in place on random batches of ``samples`` for ``spec.steps`` steps.

    Args:
        model: the model to train (on CPU or wherever it already lives).
        samples: tokenised conversations, each at most ``max_position_embeddings`` long.
        spec: optimisation settings.
        pad_id: id used to pad batches.
        on_step: called after every step with ``(step, {"loss", "learning_rate",
            "tokens_per_second"})``, step counted from 1.
        show_progress: draw a tqdm bar.
    """
    if not samples:
        raise ValueError("no training samples")
    rng = random.Random(spec.seed)
    torch.manual_seed(spec.seed)
    device = next(model.parameters()).device
    optimizer = torch.optim.AdamW(
        model.parameters(), lr=spec.learning_rate, weight_decay=spec.weight_decay
    )
    model.train()
    losses: list[float] = []
    started = time.perf_counter()
    # disable=None: a bar in a terminal, nothing in piped logs (dvc repro > log)
    bar = tqdm(range(spec.steps), desc="train tiny model", disable=None if show_progress else True)
    for step in bar:
        step_started = time.perf_counter()
        learning_rate = lr_at(step, spec)
        for group in optimizer.param_groups:
            group["lr"] = learning_rate
        batch = collate(rng.sample(samples, min(spec.batch_size, len(samples))), pad_id)
        batch = {key: value.to(device) for key, value in batch.items()}
        losses.append(_optimizer_step(model, optimizer, batch))
        bar.set_postfix(loss=f"{losses[-1]:.3f}")
        if on_step is not None:
            on_step(step + 1, _step_metrics(losses[-1], learning_rate, batch, step_started))
    model.eval()
    tail = losses[-min(10, len(losses)) :]
    return TrainResult(
        final_loss=sum(tail) / len(tail),
        losses=tuple(losses),
        seconds=time.perf_counter() - started,
        num_parameters=sum(p.numel() for p in model.parameters()),
    )


def _optimizer_step(
    model: LlamaForCausalLM, optimizer: torch.optim.Optimizer, batch: dict[str, torch.Tensor]
) -> float:
    """One optimiser step on ``batch`` with gradients clipped to norm 1; returns the batch loss."""
    loss = model(**batch).loss
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def _step_metrics(
    loss: float, learning_rate: float, batch: dict[str, torch.Tensor], step_started: float
) -> dict[str, float]:
    """The metrics ``on_step`` receives for one step."""
    tokens = int(batch["attention_mask"].sum())
    return {
        "loss": loss,
        "learning_rate": learning_rate,
        "tokens_per_second": tokens / (time.perf_counter() - step_started),
    }
