"""Embedder loading: the packaged MiniLM resolves offline; CUDA problems are loud errors."""

from __future__ import annotations

import pytest
import torch

from crsp_ops.steering.embedder import (
    EmbeddingDeviceError,
    load_sentence_embedder,
    packaged_minilm_path,
    resolve_device,
    resolve_embedder_path,
)


def test_packaged_model_path_holds_the_weights():
    path = packaged_minilm_path()
    assert (path / "model.safetensors").is_file() and (path / "modules.json").is_file()
    for name in ("all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        assert resolve_embedder_path(name) == str(path)
    assert resolve_embedder_path("/models/other") == "/models/other"


def test_device_resolution():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError, match="auto|cuda|cpu"):
        resolve_device("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_cuda_requested_without_cuda_is_an_error_not_a_fallback():
    with pytest.raises(EmbeddingDeviceError, match="no CUDA device"):
        resolve_device("cuda")
    with pytest.raises(EmbeddingDeviceError):
        load_sentence_embedder("all-MiniLM-L6-v2", device="cuda", batch_size=8)


def test_out_of_memory_while_encoding_names_the_fix(monkeypatch):
    from sentence_transformers import SentenceTransformer

    embed = load_sentence_embedder("all-MiniLM-L6-v2", device="cpu", batch_size=8)

    def oom(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(SentenceTransformer, "encode", oom)
    with pytest.raises(EmbeddingDeviceError, match="batch size 8"):
        embed(["revenue"])
