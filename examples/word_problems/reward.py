"""The example's reward, written as a TRL user would: a plain function, no crsp_ops import.

``exact_number`` gives 1.0 when the last number in the reply equals the row's ``answer`` and
0.0 otherwise (no number, or another one). Works for text and chat-message completions.
"""

import re

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _text(completion):
    return completion[-1]["content"] if isinstance(completion, list) else completion


def _last_number(text):
    numbers = _NUMBER.findall(text.replace(",", ""))
    return float(numbers[-1]) if numbers else None


def exact_number(prompts, completions, answer, **kwargs):
    """TRL's reward signature: one float per completion."""
    rewards = []
    for completion, truth in zip(completions, answer, strict=True):
        value = _last_number(_text(completion))
        rewards.append(1.0 if value is not None and value == float(truth) else 0.0)
    return rewards
