"""Every adapter gives the same biased logits as ``logits + deltas[table]`` on random inputs."""

from __future__ import annotations

import importlib.util
import json
import pickletools
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from crsp_ops.steering.codegen import write_processor
from crsp_ops.steering.hf import ClusterBiasLogitsProcessor
from crsp_ops.steering.sglang import apply_sglang_steering, sglang_processor_string
from crsp_ops.steering.vllm import SlotSteering, deltas_from_extra_args

PAD = 6  # model vocabulary padded beyond the tokenizer's


@pytest.fixture
def case(steering_table):
    table, k = steering_table
    rng = np.random.default_rng(0)
    logits = torch.from_numpy(rng.normal(size=(3, len(table) + PAD)).astype(np.float32))
    deltas = [rng.normal(scale=3.0, size=k).round(3).tolist() for _ in range(3)]
    return table, k, logits, deltas


def reference(logits, table, rows):
    """The definition, in numpy: row i gets ``rows[i][table]`` on the tokenizer's columns."""
    out = logits.numpy().copy()
    for i, row in enumerate(rows):
        if row is not None:
            out[i, : len(table)] += np.asarray(row, dtype=np.float32)[table]
    return out


def _vllm_params(row):
    return SimpleNamespace(extra_args=None if row is None else {"steer_deltas": list(row)})


def _added(rows):
    return SimpleNamespace(
        batch_size=len(rows), removed=[], moved=[],
        added=[(i, _vllm_params(row), [1, 2], []) for i, row in enumerate(rows)],
    )


def test_hf_per_row_and_shared_deltas(case):
    table, k, logits, deltas = case
    per_row = ClusterBiasLogitsProcessor(table, deltas)(None, logits.clone())
    np.testing.assert_allclose(per_row.numpy(), reference(logits, table, deltas), rtol=0, atol=1e-6)
    shared = ClusterBiasLogitsProcessor(table, deltas[1])(None, logits.clone())
    np.testing.assert_allclose(shared.numpy(), reference(logits, table, [deltas[1]] * 3), atol=1e-6)
    assert torch.equal(per_row[:, -PAD:], logits[:, -PAD:])


def test_hf_adds_in_float32_and_leaves_its_input_alone(case):
    table, k, logits, deltas = case
    half = logits.to(torch.bfloat16)
    out = ClusterBiasLogitsProcessor(table, deltas[0])(None, half)
    assert out.dtype == torch.float32 and out is not half
    assert torch.equal(half, logits.to(torch.bfloat16))
    np.testing.assert_allclose(out.numpy(), reference(half.float(), table, [deltas[0]] * 3),
                               rtol=0, atol=1e-6)
    with pytest.raises(ValueError, match="2 deltas rows for 3"):
        ClusterBiasLogitsProcessor(table, deltas[:2])(None, logits)


def test_sglang_function_rows_none_and_missing_params(case):
    table, k, logits, deltas = case
    params = [{"steer_deltas": deltas[0], "__req__": object()}, None, {"steer_deltas": deltas[2]}]
    out = apply_sglang_steering(logits.clone(), params)
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [deltas[0], None, deltas[2]]),
                               atol=1e-6)
    assert torch.equal(apply_sglang_steering(logits.clone(), None), logits)
    assert torch.equal(apply_sglang_steering(logits.clone(), [None, {"x": 1}, None]), logits)


def test_sglang_checks_table_against_logits_and_env(case, monkeypatch):
    table, k, logits, deltas = case
    with pytest.raises(ValueError, match="another tokenizer"):
        apply_sglang_steering(logits[:, :10].clone(), [{"steer_deltas": deltas[0]}] * 3)
    monkeypatch.delenv("CRSP_STEER_TOKEN_CLUSTERS")
    with pytest.raises(RuntimeError, match="CRSP_STEER_TOKEN_CLUSTERS is not set"):
        apply_sglang_steering(logits.clone(), [{"steer_deltas": deltas[0]}] * 3)


def test_vllm_slots_follow_batch_updates(case):
    table, k, logits, deltas = case
    steering = SlotSteering(ClusterBiasLogitsProcessor(table, deltas[0])._core)
    steering.update(_added([deltas[0], None, deltas[2]]))
    out = steering.apply(logits.clone())
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [deltas[0], None, deltas[2]]),
                               atol=1e-6)
    cached = steering._bias
    steering.update(None)  # no batch change: the bias tensor is reused, apply is one add
    steering.apply(logits.clone())
    assert steering._bias is cached
    swap = SimpleNamespace(name="SWAP")
    steering.update(SimpleNamespace(batch_size=3, removed=[], added=[], moved=[(0, 1, swap)]))
    out = steering.apply(logits.clone())
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [None, deltas[0], deltas[2]]),
                               atol=1e-6)
    one_way = SimpleNamespace(name="UNIDIRECTIONAL")
    steering.update(SimpleNamespace(batch_size=2, removed=[1], added=[], moved=[(2, 0, one_way)]))
    out = steering.apply(logits[:2].clone())
    np.testing.assert_allclose(out.numpy(), reference(logits[:2], table, [deltas[2], None]),
                               atol=1e-6)
    steering.update(SimpleNamespace(batch_size=1, removed=[0], added=[], moved=[]))
    assert torch.equal(steering.apply(logits[:1].clone()), logits[:1])


@pytest.mark.parametrize(
    ("extra_args", "message"),
    [
        ({"steer_deltas": "1,2,3,4,5"}, "flat list"),
        ({"steer_deltas": []}, "flat list"),
        ({"steer_deltas": [[1.0] * 5]}, "expected 5 deltas"),
        ({"steer_deltas": [1.0] * 4}, "expected 5 deltas"),
        ({"steer_deltas": [1.0, 2.0, float("inf"), 0.0, 0.0]}, "finite"),
        ({"steer_deltas": [1.0, 2.0, True, 0.0, 0.0]}, "numbers"),
        ({"steer_deltas": [1.0, 2.0, "3", 0.0, 0.0]}, "numbers"),
    ],
)
def test_vllm_rejects_malformed_deltas(extra_args, message):
    with pytest.raises(ValueError, match=message):
        deltas_from_extra_args(extra_args, 5)


def test_vllm_no_deltas_means_no_steering():
    assert deltas_from_extra_args(None, 5) is None
    assert deltas_from_extra_args({"kv_transfer_params": "x"}, 5) is None
    assert deltas_from_extra_args({"steer_deltas": [1, 2.5]}, 2) == (1.0, 2.5)


def test_generated_processor_file_is_self_contained_and_identical(case, tmp_path):
    table, k, logits, deltas = case
    path = write_processor(tmp_path / "processor.py", table, deltas[1], n_clusters=k)
    source = path.read_text()
    assert "crsp_ops" not in source.split('"""', 2)[2]  # only the docstring names us
    spec = importlib.util.spec_from_file_location("generated_processor", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.DELTAS == deltas[1] and module.VOCAB_SIZE == len(table)
    assert module.token_clusters("cpu").tolist() == table.tolist()
    baked = module.apply_steering(logits.clone())  # no custom params: the baked deltas
    np.testing.assert_allclose(baked.numpy(), reference(logits, table, [deltas[1]] * 3), atol=1e-6)
    params = [{"steer_deltas": deltas[0]}, None, {"steer_deltas": deltas[2]}]
    mixed = module.apply_steering(logits.clone(), params)
    np.testing.assert_allclose(mixed.numpy(), reference(logits, table, deltas), atol=1e-6)
    assert not hasattr(module, "SteeringLogitProcessor")  # sglang is not installed here


def test_generated_processor_runs_without_crsp_ops(case, tmp_path):
    import subprocess
    import sys

    table, k, logits, deltas = case
    write_processor(tmp_path / "processor.py", table, deltas[0], n_clusters=k)
    script = (
        "import sys, torch; sys.modules['crsp_ops'] = None; sys.path.insert(0, sys.argv[1]);"
        "import processor; out = processor.apply_steering(torch.zeros(1, processor.VOCAB_SIZE));"
        "print(out.sum().item())"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert float(result.stdout) == pytest.approx(float(np.asarray(deltas[0])[table].sum()), rel=1e-5)


def test_sglang_engine_class_against_stub(sglang_stub, case):
    adapter, stub = sglang_stub
    table, k, logits, deltas = case
    assert hasattr(adapter, "ClusterBiasSGLangProcessor")
    processor_str = adapter.sglang_processor_string()
    assert processor_str == adapter.sglang_processor_string()  # one string for every request
    processor = stub.CustomLogitProcessor.from_str(processor_str)
    assert isinstance(processor, adapter.ClusterBiasSGLangProcessor)
    params = [{"steer_deltas": deltas[0]}, None, {"steer_deltas": deltas[2]}]
    out = processor(logits.clone(), params)
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [deltas[0], None, deltas[2]]),
                               atol=1e-6)
    # a second instance (newer SGLang makes one per batch) shares the process-wide cache
    again = stub.CustomLogitProcessor.from_str(processor_str)
    assert torch.equal(again(logits.clone(), params), out)


def test_sglang_string_without_sglang_pickles_the_class_by_reference():
    payload = bytes.fromhex(json.loads(sglang_processor_string())["callable"])
    ops = [(op.name, arg) for op, arg, _ in pickletools.genops(payload)]
    assert ("GLOBAL", "crsp_ops.steering.sglang ClusterBiasSGLangProcessor") in ops


def test_vllm_engine_class_against_stub(vllm_stub, case):
    adapter, stub = vllm_stub
    table, k, logits, deltas = case
    cls = adapter.ClusterBiasVLLMProcessor
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: len(table) + PAD))
    processor = cls(config, torch.device("cpu"), False)
    assert processor.is_argmax_invariant() is False
    cls.validate_params(_vllm_params(deltas[0]))
    with pytest.raises(ValueError, match="expected 5 deltas"):
        cls.validate_params(_vllm_params(deltas[0][:3]))
    added = [(i, _vllm_params(row), None, []) for i, row in enumerate([deltas[0], None, deltas[2]])]
    processor.update_state(stub.BatchUpdate(batch_size=3, removed=[], added=added, moved=[]))
    out = processor.apply(logits.clone())
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [deltas[0], None, deltas[2]]),
                               atol=1e-6)
    swap = stub.BatchUpdate(
        batch_size=3, removed=[], added=[], moved=[(0, 2, stub.MoveDirectionality.SWAP)]
    )
    processor.update_state(swap)
    out = processor.apply(logits.clone())
    np.testing.assert_allclose(out.numpy(), reference(logits, table, [deltas[2], None, deltas[0]]),
                               atol=1e-6)
    small = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: 10))
    with pytest.raises(ValueError, match="another tokenizer"):
        cls(small, torch.device("cpu"), False)
