"""Steering test fixtures: a hashing embedder and the two real tokenizers of the acceptance."""

from __future__ import annotations

import numpy as np
import pytest

from tests.fakes import hashing_embed


@pytest.fixture(scope="session")
def hash_embed():
    return hashing_embed


@pytest.fixture(scope="session")
def tiny_tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_model_dir))


@pytest.fixture(scope="session")
def tiny_generation_eos(tiny_model_dir):
    from transformers import GenerationConfig

    return GenerationConfig.from_pretrained(str(tiny_model_dir)).eos_token_id


@pytest.fixture(scope="session")
def minilm_tokenizer():
    from transformers import AutoTokenizer

    from crsp_ops.steering.embedder import packaged_minilm_path

    return AutoTokenizer.from_pretrained(str(packaged_minilm_path()))


# --- Stand-ins for the engine base classes, for the fast suite (the engines themselves are
# GBs: `make test-engines` runs the same adapters against vllm 0.32.0 and sglang 0.5.23).
# Copied in behaviour from sglang python/sglang/srt/sampling/custom_logit_processor.py (classmethod
# to_str since 065927d and in 0.5.23; instance to_str at 3205326) and
# vllm/v1/sample/logits_processor/interface.py.

SGLANG_STUB = '''
import json
from abc import ABC, abstractmethod
from functools import lru_cache

import dill


@lru_cache(maxsize=None)
def _cache_from_str(json_str):
    return dill.loads(bytes.fromhex(json.loads(json_str)["callable"]))


class CustomLogitProcessor(ABC):
    @abstractmethod
    def __call__(self, logits, custom_param_list=None):
        raise NotImplementedError
{serialization}
'''

SGLANG_NEW = '''
    @classmethod
    def to_str(cls):
        return json.dumps({"callable": dill.dumps(cls).hex()})

    @classmethod
    def from_str(cls, json_str):
        return _cache_from_str(json_str)()
'''

SGLANG_OLD = '''
    def to_str(self):
        return json.dumps({"callable": dill.dumps(self).hex()})

    @classmethod
    def from_str(cls, json_str):
        return _cache_from_str(json_str)
'''

VLLM_STUB = '''
from abc import ABC, abstractmethod
from dataclasses import dataclass
from enum import Enum, auto
from typing import Sequence


class MoveDirectionality(Enum):
    UNIDIRECTIONAL = auto()
    SWAP = auto()


@dataclass(frozen=True)
class BatchUpdate:
    batch_size: int
    removed: Sequence
    added: Sequence
    moved: Sequence


class LogitsProcessor(ABC):
    @classmethod
    def validate_params(cls, sampling_params):
        return None

    @abstractmethod
    def __init__(self, vllm_config, device, is_pin_memory):
        raise NotImplementedError

    @abstractmethod
    def apply(self, logits):
        raise NotImplementedError

    @abstractmethod
    def is_argmax_invariant(self):
        raise NotImplementedError

    @abstractmethod
    def update_state(self, batch_update):
        raise NotImplementedError
'''


def _stubbed_engine(module_name, source, adapter_name):
    """Install a stub engine module, reload our adapter against it, restore everything after."""
    import importlib
    import sys
    import types

    adapter = importlib.import_module(adapter_name)
    parts = module_name.split(".")
    names = [".".join(parts[: i + 1]) for i in range(len(parts))]
    saved = {name: sys.modules.get(name) for name in names}
    for name in names[:-1]:
        sys.modules[name] = types.ModuleType(name)
    stub = types.ModuleType(module_name)
    sys.modules[module_name] = stub  # before exec: dataclasses look their module up
    exec(compile(source, module_name, "exec"), stub.__dict__)
    try:
        yield importlib.reload(adapter), stub
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
        importlib.reload(adapter)


@pytest.fixture(params=["classmethod_to_str", "instance_to_str"])
def sglang_stub(request):
    serialization = SGLANG_NEW if request.param == "classmethod_to_str" else SGLANG_OLD
    yield from _stubbed_engine(
        "sglang.srt.sampling.custom_logit_processor",
        SGLANG_STUB.format(serialization=serialization),
        "crsp_ops.steering.sglang",
    )


@pytest.fixture
def vllm_stub():
    yield from _stubbed_engine(
        "vllm.v1.sample.logits_processor", VLLM_STUB, "crsp_ops.steering.vllm"
    )


@pytest.fixture
def steering_table(tmp_path, monkeypatch):
    """A random (V=40, K=5) table saved like the clusters stage and exported to servers."""
    from crsp_ops.steering.table import TOKEN_CLUSTERS_ENV

    table = np.random.default_rng(1).integers(0, 5, size=40)
    table[:5] = np.arange(5)  # every cluster id present
    path = tmp_path / "token_clusters.npy"
    np.save(path, table)
    monkeypatch.setenv(TOKEN_CLUSTERS_ENV, str(path))
    return table.astype(np.int64), 5


# Model Runner V2's interface as installed with vllm 0.32.0 (and 0.31.0):
# vllm/v1/worker/gpu/sample/logits_processor/interface.py, and the subclass check its loader
# (loader.py, _load_v2_logitsprocs_by_fqcns) applies to every class it is given.
VLLM_V2_STUB = '''
from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class LogitsContext:
    expanded_idx_mapping: object
    idx_mapping: object
    idx_mapping_np: object
    expanded_local_pos: object = None
    input_ids: object = None
    pos: object = None
    seq_lens_upper_bound_np: object = None


class LogitsProcessor(ABC):
    def __init__(self, vllm_config, req_states):
        pass

    @classmethod
    def validate_params(cls, sampling_params):
        pass

    def add_request(self, req_idx, sampling_params):
        return True

    def apply_staged_writes(self):
        pass

    @abstractmethod
    def apply(self, logits, ctx):
        raise NotImplementedError


def load_v2_class(cls):
    if not issubclass(cls, LogitsProcessor):
        raise ValueError(
            f"{cls.__name__} is not a subclass of "
            "vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor"
        )
    return cls
'''


@pytest.fixture
def vllm_v2_stub():
    yield from _stubbed_engine(
        "vllm.v1.worker.gpu.sample.logits_processor", VLLM_V2_STUB, "crsp_ops.steering.vllm_v2"
    )
