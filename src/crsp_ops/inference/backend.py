"""The one interface every generation engine implements."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from crsp_ops.inference.completions import Completion, SamplingParams

Message = dict[str, str]
"""A chat message: ``{"role": "user" | "assistant" | "system", "content": str}``."""


class GenerationBackend(ABC):
    """Generate chat completions, optionally steered by per-cluster deltas.

    The token→cluster table is part of the backend's setup (loaded once: in-process into the
    logits processor, server-side into the engine's processor); only the per-cluster deltas
    travel with each call, so changing them never rebuilds anything.
    """

    @abstractmethod
    def generate(
        self,
        conversations: Sequence[Sequence[Message]],
        params: SamplingParams,
        deltas: Sequence[float] | None = None,
    ) -> list[Completion]:
        """Return one completion per conversation, in input order.

        Args:
            conversations: chat message lists; the backend applies the model's chat template
                with the generation prompt, or, when the last message is the assistant's,
                continues that message (a prefill such as ``<think>``; the completion's text
                is only what follows it; see ``hf_chat``).
            params: sampling parameters shared by the batch.
            deltas: per-cluster steering deltas (index = cluster id), or ``None`` for no
                steering. Raises ``ValueError`` if deltas are given to a backend set up without
                a token→cluster table, or if their length does not match the table.

        Returns:
            ``len(conversations)`` completions; never silently fewer.
        """

    def close(self) -> None:  # noqa: B027 - optional hook, a no-op by default
        """Release resources (servers, GPU memory). Safe to call twice."""

    def __enter__(self) -> GenerationBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
