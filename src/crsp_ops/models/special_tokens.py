"""The tiny model's special tokens and its ChatML-style chat template."""

from __future__ import annotations

BOS_TOKEN = "<|begin_of_text|>"
EOS_TOKEN = "<|endoftext|>"  # end of a document; also stops generation
PAD_TOKEN = "<|pad|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"  # end of turn: the tokenizer's eos_token, so chat generation stops on it
THINK_START = "<think>"
THINK_END = "</think>"

# Control tokens: never produced as text, skipped by decode(skip_special_tokens=True).
CONTROL_TOKENS = (BOS_TOKEN, EOS_TOKEN, PAD_TOKEN, IM_START, IM_END)
# Think markers are atomic tokens but ordinary text (special=False, as in Qwen3), so a decoded
# response keeps them and `<think>` extraction works on plain text.
TEXT_MARKER_TOKENS = (THINK_START, THINK_END)

CHAT_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
