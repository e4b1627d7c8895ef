"""benchmarks.step memory's formula (was memory_modes.py): its parts and the optimizer step's peak."""

from __future__ import annotations

from benchmarks.step.memory import llama_params, memory_formula

GIB = 2**30
# Qwen2.5-1.5B's sizes: hidden, layers, intermediate, kv_hidden, vocab, tied
QWEN_1_5B = (1536, 28, 8960, 256, 151936, True)


def formula(params: int, trainable: int, checkpointing: bool, **kw) -> dict:
    hidden, layers, inter, kv, vocab, _ = QWEN_1_5B
    return memory_formula(params=params, trainable=trainable, layers=layers, hidden=hidden,
                          intermediate=inter, kv_hidden=kv, vocab=vocab, tokens=576,
                          response_tokens=512, checkpointing=checkpointing, **kw)


def test_the_peak_is_the_larger_of_the_backward_pass_and_the_optimizer_step():
    params = llama_params(*QWEN_1_5B)
    parts = formula(params, params, checkpointing=True)
    held = parts["weights"] + parts["grads_and_optimizer"]
    assert parts["optimizer_step"] == 4 * params > parts["activations"] + parts["logits"]
    assert parts["total"] == held + parts["optimizer_step"] == 20 * params
    # a tiny trainable set (LoRA): the activations are the larger part again
    lora = formula(params, 10**6, checkpointing=False)
    assert lora["total"] == (lora["weights"] + lora["grads_and_optimizer"]
                             + lora["activations"] + lora["logits"])


def test_full_fine_tuning_at_1_5b_matches_the_h200_measurement():
    # lab/results/gpu_2026-11-26: full 28.829 GiB, full + ckpt 28.876 GiB (bf16 autocast)
    params = llama_params(*QWEN_1_5B)
    for checkpointing, measured in ((False, 28.829), (True, 28.876)):
        predicted = formula(params, params, checkpointing)["total"] / GIB
        assert abs(measured / predicted - 1) < 0.03


def test_sharding_splits_the_optimizer_step_too():
    params = llama_params(*QWEN_1_5B)
    assert formula(params, params, True, shards=8)["optimizer_step"] == 4 * params // 8


def test_a_bf16_base_counts_two_bytes_per_frozen_parameter_and_four_per_trained_one():
    params, adapter = llama_params(*QWEN_1_5B), 10**6
    fp32 = formula(params + adapter, adapter, checkpointing=False)
    bf16 = formula(params + adapter, adapter, checkpointing=False, weight_bytes=2,
                   activation_bytes=2)
    assert fp32["weights"] == 4 * (params + adapter)
    assert bf16["weights"] == 2 * params + 4 * adapter  # the adapter stays fp32
    assert 2 * bf16["activations"] == fp32["activations"]
    assert bf16["grads_and_optimizer"] == fp32["grads_and_optimizer"] == 12 * adapter
    # full fine-tuning trains every weight: fp32 whatever the frozen weights' bytes
    assert formula(params, params, True, weight_bytes=2)["weights"] == 4 * params
