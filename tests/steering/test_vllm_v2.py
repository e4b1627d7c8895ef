"""Model Runner V2 adapter: per-slot deltas on the device, rows mapped through
``expanded_idx_mapping`` (reordered, and expanded as under speculative decoding)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from crsp_ops.steering.bias import ClusterBias
from crsp_ops.steering.vllm_v2 import SlotDeltas

PAD = 3  # model vocabulary padded beyond the tokenizer's


@pytest.fixture
def setup(steering_table):
    table, k = steering_table
    rng = np.random.default_rng(3)
    deltas = [rng.normal(scale=2.0, size=k).round(3).tolist() for _ in range(2)]
    logits = torch.from_numpy(rng.normal(size=(6, len(table) + PAD)).astype(np.float32))
    return table, k, deltas, logits


def expected(logits, table, rows):
    out = logits.numpy().copy()
    for i, row in enumerate(rows):
        if row is not None:
            out[i, : len(table)] += np.asarray(row, dtype=np.float32)[table]
    return out


def test_rows_follow_expanded_idx_mapping_in_place(setup):
    table, k, (a, b), logits = setup
    slots = SlotDeltas(ClusterBias(table, k), max_num_reqs=4, device="cpu")
    assert slots.add(2, {"steer_deltas": a}) is True
    assert slots.add(0, {"steer_deltas": b}) is True
    assert slots.add(1, None) is False and slots.add(3, {"other": 1}) is False
    slots.flush()
    # Rows reordered every step; slot 2 owns three rows (two draft tokens + the bonus one).
    row_slots = torch.tensor([2, 0, 2, 1, 2, 3], dtype=torch.int32)
    work = logits.clone()
    out = slots.apply(work, row_slots, np.array([2, 0, 1, 3]))
    assert out is work  # added in place
    assert out.dtype == torch.float32
    np.testing.assert_allclose(out.numpy(), expected(logits, table, [a, b, a, None, a, None]),
                               atol=1e-6)


def test_same_bias_as_the_shared_core(setup):
    table, k, (a, b), logits = setup
    core = ClusterBias(table, k)
    slots = SlotDeltas(core, max_num_reqs=2, device="cpu")
    slots.add(0, {"steer_deltas": a})
    slots.add(1, {"steer_deltas": b})
    slots.flush()
    rows = logits[:2].clone()
    ours = slots.apply(logits[:2].clone(), torch.tensor([1, 0]), None)
    assert torch.equal(ours, core.apply_(rows, [b, a]))


def test_unsteered_batch_is_skipped_and_recycled_slots_are_cleared(setup):
    table, k, (a, _), logits = setup
    slots = SlotDeltas(ClusterBias(table, k), max_num_reqs=3, device="cpu")
    slots.add(1, {"steer_deltas": a})
    slots.flush()
    untouched = logits[:2].clone()
    assert torch.equal(slots.apply(untouched, torch.tensor([0, 2]), np.array([0, 2])), logits[:2])
    slots.add(1, None)  # the slot is recycled by an unsteered request
    slots.flush()
    assert not slots.steered.any() and torch.count_nonzero(slots.deltas) == 0
    out = slots.apply(logits[:1].clone(), torch.tensor([1]), None)
    assert torch.equal(out, logits[:1])


def test_staged_rows_reach_the_device_only_on_flush(setup):
    table, k, (a, _), logits = setup
    slots = SlotDeltas(ClusterBias(table, k), max_num_reqs=2, device="cpu")
    slots.add(0, {"steer_deltas": a})
    assert torch.count_nonzero(slots.deltas) == 0  # vLLM calls apply_staged_writes first
    slots.flush()
    assert slots.deltas[0].tolist() == pytest.approx(a)


def test_grammar_masked_tokens_stay_masked(setup):
    table, k, (a, _), logits = setup
    slots = SlotDeltas(ClusterBias(table, k), max_num_reqs=1, device="cpu")
    slots.add(0, {"steer_deltas": [abs(x) + 50.0 for x in a]})
    slots.flush()
    masked = logits[:1].clone()
    masked[0, 5:] = float("-inf")
    out = slots.apply(masked, torch.tensor([0]), None)
    assert torch.isinf(out[0, 5:]).all() and torch.isfinite(out[0, :5]).all()


@pytest.mark.parametrize(("extra_args", "message"), [
    ({"steer_deltas": [1.0, 2.0]}, "expected 5 deltas"),
    ({"steer_deltas": [float("nan")] * 5}, "finite"),
    ({"steer_deltas": {"0": 1.0}}, "flat list"),
])
def test_malformed_deltas_are_refused(steering_table, extra_args, message):
    table, k = steering_table
    slots = SlotDeltas(ClusterBias(table, k), max_num_reqs=1, device="cpu")
    with pytest.raises(ValueError, match=message):
        slots.add(0, extra_args)


def _params(row):
    return SimpleNamespace(extra_args=None if row is None else {"steer_deltas": list(row)})


def test_v2_engine_class_against_the_stand_in(vllm_v2_stub, setup):
    adapter, stub = vllm_v2_stub
    table, k, (a, b), logits = setup
    cls = stub.load_v2_class(adapter.ClusterBiasVLLMV2Processor)  # the loader's subclass check
    config = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: len(table) + PAD))
    req_states = SimpleNamespace(max_num_reqs=4, device=torch.device("cpu"), vocab_size=len(table))
    processor = cls(config, req_states)
    assert processor.is_argmax_invariant() is False
    cls.validate_params(_params(a))
    with pytest.raises(ValueError, match="expected 5 deltas"):
        cls.validate_params(_params(a[:2]))
    assert [processor.add_request(slot, _params(row))
            for slot, row in [(3, a), (1, None), (0, b)]] == [True, False, True]
    processor.apply_staged_writes()
    ctx = stub.LogitsContext(expanded_idx_mapping=torch.tensor([0, 3, 3, 1]),
                             idx_mapping=torch.tensor([0, 3, 1]),
                             idx_mapping_np=np.array([0, 3, 1]))
    out = processor.apply(logits[:4].clone(), ctx)
    np.testing.assert_allclose(out.numpy(), expected(logits[:4], table, [b, a, a, None]),
                               atol=1e-6)
    small = SimpleNamespace(model_config=SimpleNamespace(get_vocab_size=lambda: 10))
    with pytest.raises(ValueError, match="another tokenizer"):
        cls(small, req_states)


def test_v1_class_is_not_a_v2_processor(vllm_stub, vllm_v2_stub):
    """The two interfaces are unrelated classes: V2's loader check refuses the V1 class."""
    v1_adapter, _ = vllm_stub
    _, v2 = vllm_v2_stub
    with pytest.raises(ValueError, match="is not a subclass"):
        v2.load_v2_class(v1_adapter.ClusterBiasVLLMProcessor)
