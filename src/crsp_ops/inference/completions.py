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
    """How to sample one batch of completions (values come from the config).

    The knobs after ``seed`` default to off, so a caller that does not name them (greedy
    evaluation, the canary) decodes as before they existed.
    """

    max_new_tokens: int  # upper bound on response tokens
    temperature: float  # 0.0 means greedy
    top_p: float  # nucleus mass; 1.0 disables
    seed: int | None = None  # per-call sampling seed where the engine supports one
    top_k: int = 0  # keep the k most likely tokens; 0 disables
    min_p: float = 0.0  # drop tokens below min_p x the top probability; 0.0 disables
    repetition_penalty: float = 1.0  # on tokens of the prompt and response so far; 1.0 disables

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if isinstance(self.top_k, bool) or not isinstance(self.top_k, int) or self.top_k < 0:
            raise ValueError(f"top_k must be an integer >= 0 (0 = off), got {self.top_k!r}")
        if not 0 <= self.min_p <= 1:
            raise ValueError(f"min_p must be in [0, 1] (0 = off), got {self.min_p}")
        if not self.repetition_penalty > 0:
            raise ValueError(
                f"repetition_penalty must be > 0 (1 = off), got {self.repetition_penalty}")

    @property
    def engine_extras(self) -> dict[str, float | int]:
        """The knobs outside the OpenAI API that are on, by their vLLM/SGLang request names.

        >>> SamplingParams(8, 1.0, 1.0, top_k=5).engine_extras
        {'top_k': 5}
        """
        extras = {"top_k": self.top_k, "min_p": self.min_p,
                  "repetition_penalty": self.repetition_penalty}
        off = {"top_k": 0, "min_p": 0.0, "repetition_penalty": 1.0}
        return {name: value for name, value in extras.items() if value != off[name]}

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
