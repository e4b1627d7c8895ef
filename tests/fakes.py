"""Deterministic stand-ins shared by several test packages (imported as ``tests.fakes``)."""

import zlib

import numpy as np


def hashing_embed(texts: list[str], dim: int = 32) -> np.ndarray:
    """Bag of hashed character bigrams: deterministic, fast, and similar texts land nearby."""
    out = np.zeros((len(texts), dim), dtype=np.float32)
    for row, text in enumerate(texts):
        padded = f"^{text}$"
        for first, second in zip(padded, padded[1:], strict=False):
            out[row, zlib.crc32((first + second).encode()) % dim] += 1.0
    return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-6)
