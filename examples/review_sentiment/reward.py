"""The example's reward, written as a TRL user would: a plain function, no crsp_ops import.

``one_word_label`` gives 1.0 when the reply is the row's ``label`` as one word (case and a final
period forgiven), 0.5 when the reply is longer but names only the right label, 0.0 otherwise
(the wrong label, both, or neither). Works for text and chat-message completions.
"""

import re

LABELS = ("positive", "negative")


def _text(completion):
    return completion[-1]["content"] if isinstance(completion, list) else completion


def one_word_label(prompts, completions, label, **kwargs):
    """TRL's reward signature: one float per completion."""
    rewards = []
    for completion, truth in zip(completions, label, strict=True):
        words = re.findall(r"[a-z]+", _text(completion).lower())
        named = {word for word in words if word in LABELS}
        if words == [truth]:
            rewards.append(1.0)
        else:
            rewards.append(0.5 if named == {truth} else 0.0)
    return rewards
