"""Validate an existing Hugging Face model directory named by the config (no network)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

CONFIG_FILE = "config.json"
GENERATION_CONFIG_FILE = "generation_config.json"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "tokenizer_config.json")
WEIGHT_FILES = (
    "model.safetensors",
    "model.safetensors.index.json",
    "pytorch_model.bin",
    "pytorch_model.bin.index.json",
)


class ModelDirError(ValueError):
    """The directory is not a usable HF chat model; the message says what is missing."""


@dataclass(frozen=True)
class ModelInfo:
    """What the pipeline needs to know about a model directory."""

    path: Path  # absolute path of the directory
    model_type: str  # config.json model_type, e.g. "llama"
    vocab_size: int  # len(tokenizer): every id a logits processor must cover
    eos_token_ids: tuple[int, ...]  # generation_config eos ids plus the tokenizer's eos id
    pad_token_id: int | None
    chat_template: str


def validate_hf_model_dir(path: str | Path) -> ModelInfo:
    """Check that ``path`` holds a config, weights, a tokenizer and a chat template.

    Raises:
        ModelDirError: the directory, ``config.json``, the weights, the tokenizer files or the
            chat template is missing, or the tokenizer has no eos token.
    """
    directory = Path(path).resolve()
    if not directory.is_dir():
        raise ModelDirError(f"model directory not found: {directory}")
    if not (directory / CONFIG_FILE).is_file():
        raise ModelDirError(f"{directory}: missing {CONFIG_FILE}; not a Hugging Face model dir")
    if not any((directory / name).is_file() for name in WEIGHT_FILES):
        raise ModelDirError(f"{directory}: no weights (expected one of {', '.join(WEIGHT_FILES)})")
    if not any((directory / name).is_file() for name in TOKENIZER_FILES):
        raise ModelDirError(
            f"{directory}: missing tokenizer (expected one of {', '.join(TOKENIZER_FILES)})"
        )
    # Imported here: validating a path should not cost the transformers import when it fails.
    from transformers import AutoConfig, AutoTokenizer

    config = AutoConfig.from_pretrained(directory, local_files_only=True)
    tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True)
    if not tokenizer.chat_template:
        raise ModelDirError(
            f"{directory}: the tokenizer has no chat template (add chat_template.jinja or a "
            "chat_template entry in tokenizer_config.json)"
        )
    eos_ids = _generation_eos_ids(directory)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos_ids:
        eos_ids.append(tokenizer.eos_token_id)
    if not eos_ids:
        raise ModelDirError(f"{directory}: no eos token in generation_config or tokenizer")
    return ModelInfo(
        path=directory,
        model_type=config.model_type,
        vocab_size=len(tokenizer),
        eos_token_ids=tuple(eos_ids),
        pad_token_id=tokenizer.pad_token_id,
        chat_template=tokenizer.chat_template,
    )


def _generation_eos_ids(directory: Path) -> list[int]:
    file = directory / GENERATION_CONFIG_FILE
    if not file.is_file():
        return []
    try:
        value = json.loads(file.read_text(encoding="utf-8")).get("eos_token_id")
    except json.JSONDecodeError as error:
        raise ModelDirError(f"{file}: not valid JSON ({error.msg})") from error
    if value is None:
        return []
    return [value] if isinstance(value, int) else list(value)
