"""The example's reward, written as a TRL user would: a plain function, no crsp_ops import.

``json_fields`` gives 1.0 when the reply is a JSON object whose ``name`` and ``city`` match the
row's (case and surrounding spaces ignored), 0.5 when one of them does, and 0.0 otherwise,
including when no JSON object can be parsed. Works for text and chat-message completions.
"""

import json
import re

_OBJECT = re.compile(r"\{.*?\}", re.DOTALL)


def _text(completion):
    return completion[-1]["content"] if isinstance(completion, list) else completion


def _parsed(text):
    for match in _OBJECT.finditer(text):
        try:
            value = json.loads(match.group(0))
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _same(left, right):
    return isinstance(left, str) and left.strip().lower() == right.strip().lower()


def json_fields(prompts, completions, name, city, **kwargs):
    """TRL's reward signature: one float per completion."""
    rewards = []
    for completion, true_name, true_city in zip(completions, name, city, strict=True):
        value = _parsed(_text(completion))
        if value is None:
            rewards.append(0.0)
            continue
        hits = _same(value.get("name"), true_name) + _same(value.get("city"), true_city)
        rewards.append(hits / 2)
    return rewards
