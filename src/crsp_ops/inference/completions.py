"""Records every generation backend returns, whatever engine produced them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

LogprobSemantics = Literal["raw", "processed", "none"]
"""Which distribution a logprob came from.

``raw``: the policy's own distribution (before steering bias and temperature);
``processed``: after the steering bias (what was actually sampled from);
``none``: the engine returned no logprobs.
"""


@dataclass(frozen=True)
class SamplingParams:
    """How to sample one batch of completions (no defaults: values come from the config)."""

    max_new_tokens: int  # upper bound on response tokens
    temperature: float  # 0.0 means greedy
    top_p: float  # nucleus mass; 1.0 disables
    seed: int | None = None  # per-call sampling seed where the engine supports one

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")

    @property
    def greedy(self) -> bool:
        """True when decoding is deterministic argmax."""
        return self.temperature == 0.0


@dataclass(frozen=True)
class Completion:
    """One generated response, engine-independent."""

    text: str  # decoded response (special tokens stripped)
    prompt_token_ids: tuple[int, ...]  # ids the engine fed the model, chat template applied
    token_ids: tuple[int, ...]  # response ids, in order, including a final EOS if generated
    logprobs: tuple[float, ...]  # logprob of each response token (empty if semantics == "none")
    finish_reason: str  # "stop" (EOS / stop string) or "length" (hit max_new_tokens)
    logprob_semantics: LogprobSemantics = "none"
    extra: dict = field(default_factory=dict, compare=False)  # engine-specific metadata

    def __post_init__(self) -> None:
        if self.logprob_semantics != "none" and len(self.logprobs) != len(self.token_ids):
            raise ValueError(
                f"{len(self.logprobs)} logprobs for {len(self.token_ids)} response tokens"
            )

    @property
    def prompt_tokens(self) -> int:
        """Number of prompt tokens."""
        return len(self.prompt_token_ids)

    @property
    def response_tokens(self) -> int:
        """Number of response tokens."""
        return len(self.token_ids)
