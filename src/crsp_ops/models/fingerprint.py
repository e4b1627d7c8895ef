"""What identifies a base model for comparisons: weights and tokenizer content hashes.

Two runs are comparable only on the same weights and tokenizer; the id is readable
(``<name>-<first 12 hex of the weights hash>``) and is what the registry and ``compare`` key on.
A converted model's weights hash is its GGUF's sha256 (recorded in ``model_ref.json`` by the
base-model stage), so nothing large is re-hashed per run.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path

from crsp_ops.models.model_ref import read_model_ref, resolve_model_dir, resolve_tokenizer_dir

WEIGHT_PATTERNS = ("*.safetensors", "*.bin")
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.model", "vocab.json", "merges.txt",
                   "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")


@dataclass(frozen=True)
class ModelFingerprint:
    """The identity of a base model."""

    model_id: str  # "<name>-<weights hash prefix>": one registered model per id
    weights_sha256: str
    tokenizer_sha256: str

    def tags(self) -> dict[str, str]:
        """MLflow run tags."""
        return {"base_model.id": self.model_id, "base_model.weights_sha256": self.weights_sha256,
                "base_model.tokenizer_sha256": self.tokenizer_sha256}


def files_sha256(paths: list[Path], root: Path) -> str:
    """One sha256 over the names (relative to ``root``) and contents of ``paths``."""
    digest = hashlib.sha256()
    for path in sorted(paths):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        with open(path, "rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    return digest.hexdigest()


def weights_sha256(model_dir: Path) -> str:
    """Content hash of the weight files of an HF model directory."""
    files = [p for pattern in WEIGHT_PATTERNS for p in Path(model_dir).glob(pattern)]
    if not files:
        raise FileNotFoundError(f"{model_dir}: no weight files ({', '.join(WEIGHT_PATTERNS)})")
    return files_sha256(files, Path(model_dir))


def tokenizer_sha256(tokenizer_dir: Path) -> str:
    """Content hash of the tokenizer files of a directory."""
    files = [p for n in TOKENIZER_FILES if (p := Path(tokenizer_dir) / n).is_file()]
    if not files:
        raise FileNotFoundError(f"{tokenizer_dir}: no tokenizer files")
    return files_sha256(files, Path(tokenizer_dir))


def model_fingerprint(path: str | Path) -> ModelFingerprint:
    """The fingerprint of the base model at ``path`` (a model dir or a ``model_ref.json`` dir).

    Hashes recorded in ``model_ref.json`` (``weights_sha256``, ``tokenizer_sha256``, ``name``)
    are used as they are; the rest is computed from the files.
    """
    ref = read_model_ref(path) or {}
    model_dir, tokenizer_dir = resolve_model_dir(path), resolve_tokenizer_dir(path)
    weights = ref.get("weights_sha256") or weights_sha256(model_dir)
    tokenizer = ref.get("tokenizer_sha256") or tokenizer_sha256(tokenizer_dir)
    name = ref.get("name") or _config_name(model_dir)
    return ModelFingerprint(f"{slug(name)}-{weights[:12]}", weights, tokenizer)


def slug(text: str) -> str:
    """Lower-case letters, digits and dashes (a registered-model-name-safe piece).

    >>> slug("SmolLM2-135M Instruct")
    'smollm2-135m-instruct'
    """
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "model"


def _config_name(model_dir: Path) -> str:
    config = Path(model_dir) / "config.json"
    if config.is_file():
        return json.loads(config.read_text()).get("model_type", "model")
    return "model"
