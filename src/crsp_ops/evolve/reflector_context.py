"""Fit the reflector's prompt into its model's context before it is sent.

The budget is the context minus the reply budget; ``fit_prompt`` cuts in a fixed order, one
step at a time, counting tokens again after each.

Design: docs/design/evolve.md#reflector_context.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

Messages = list[dict[str, str]]
TokenCount = Callable[[Messages], int]
# (responses shown, summary entries, per-response character cap) -> messages
Render = Callable[[Sequence[Any], Sequence[Any], int], Messages]

CHARS_PER_TOKEN = 2.0
MESSAGE_OVERHEAD = 8  # role markers and separators of a chat template, per message
MIN_RESPONSE_CHARS = 64


class PromptTooLong(ValueError):
    """The prompt does not fit even after every cut of the rule."""


@dataclass(frozen=True)
class FittedPrompt:
    """The messages to send and what was cut to fit them."""

    messages: Messages
    tokens: int  # the prompt as counted
    budget: int  # context minus the reply budget
    dropped_responses: int
    dropped_summary_entries: int
    response_chars: int  # the per-response character cap in the end (0 = none)
    truncated: bool  # the cap was lowered by the rule

    @property
    def cut(self) -> bool:
        """Whether anything was cut."""
        return bool(self.dropped_responses or self.dropped_summary_entries or self.truncated)


def estimate_tokens(messages: Messages) -> int:
    """A conservative token count: ``CHARS_PER_TOKEN`` characters a token, plus overheads.

    >>> estimate_tokens([{"role": "user", "content": "x" * 10}])  # 5 + 8 + 1 (reply prefix)
    14
    """
    return sum(math.ceil(len(m["content"]) / CHARS_PER_TOKEN) + MESSAGE_OVERHEAD
               for m in messages) + 1  # the assistant prefix the template appends


def fit_prompt(
    responses: Sequence[Any], summary: Sequence[Any], *, render: Render, count: TokenCount,
    budget: int, lengths: Sequence[int], max_response_chars: int,
) -> FittedPrompt:
    """Apply the module's rule until the rendered prompt counts at most ``budget`` tokens.

    Args:
        responses: the responses to show, in the order they are shown.
        summary: the evolving summary's entries, oldest first.
        render: builds the messages from the kept responses, entries and character cap.
        count: the prompt's tokens in the reflector model's tokenizer.
        budget: the context minus the reply budget.
        lengths: each response's length (shortest dropped first; ties: the later one).
        max_response_chars: the configured cap (0 = none).

    Raises:
        PromptTooLong: still over the budget after every cut.
    """
    kept, entries, chars = list(range(len(responses))), list(summary), max_response_chars

    def attempt() -> tuple[Messages, int]:
        messages = render([responses[i] for i in kept], entries, chars)
        return messages, count(messages)

    messages, tokens = attempt()
    while tokens > budget:
        if len(kept) > 1:
            kept.remove(min(kept, key=lambda i: (lengths[i], -i)))
        elif len(entries) > 1:
            entries.pop(0)
        elif chars == 0 or chars > MIN_RESPONSE_CHARS:
            longest = max(len(str(getattr(responses[i], "answer", ""))) for i in kept) \
                if kept else 0
            chars = max(MIN_RESPONSE_CHARS, (chars or longest) // 2)
        else:
            raise PromptTooLong(f"the reflector prompt counts {tokens} tokens after every cut, "
                                f"over its budget of {budget}")
        messages, tokens = attempt()
    return FittedPrompt(messages, tokens, budget, len(responses) - len(kept),
                        len(summary) - len(entries), chars,
                        truncated=chars != max_response_chars)
