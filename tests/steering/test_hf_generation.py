"""Real greedy generation with the tiny model, steered through ``ClusterBiasLogitsProcessor``."""

from __future__ import annotations

import pytest
import torch

from crsp_ops.steering.clusters import build_token_clusters
from crsp_ops.steering.hf import ClusterBiasLogitsProcessor

MAX_NEW_TOKENS = 48
N_PROMPTS = 6


@pytest.fixture(scope="module")
def tiny(tiny_model_dir, tiny_tokenizer, tiny_generation_eos, tiny_prompt_template, hash_embed):
    from transformers import AutoModelForCausalLM

    from crsp_ops.data.financebench import load_financebench, render_question_prompt

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)).eval()
    rows = load_financebench("synthetic", synthetic_count=N_PROMPTS, seed=123).rows
    prompts = [
        tiny_tokenizer.apply_chat_template(
            [{"role": "user", "content": render_question_prompt(row, template=tiny_prompt_template)}],
            add_generation_prompt=True, tokenize=False,
        )
        for row in rows
    ]
    tiny_tokenizer.padding_side = "left"
    inputs = tiny_tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    clusters = build_token_clusters(
        tiny_tokenizer, embed=hash_embed, generation_eos_ids=tiny_generation_eos,
        n_kmeans_clusters=4, pca_dim=8, seed=0, batch_size=512, minibatch_threshold=10_000,
        n_representatives=3, progress=False,
    )
    return model, tiny_tokenizer, inputs, clusters


def _generate(tiny, deltas, **kwargs):
    model, tokenizer, inputs, clusters = tiny
    processors = []
    if deltas is not None:
        processors = [ClusterBiasLogitsProcessor(clusters.token_clusters, deltas)]
    with torch.inference_mode():
        return model.generate(
            **inputs, max_new_tokens=MAX_NEW_TOKENS, do_sample=False,
            pad_token_id=tokenizer.pad_token_id, logits_processor=processors, **kwargs,
        )


def _responses(tiny, output):
    model, tokenizer, inputs, clusters = tiny
    responses = []
    for row in output[:, inputs["input_ids"].shape[1] :].tolist():
        end = next((i + 1 for i, t in enumerate(row) if t in clusters.eos_ids), len(row))
        responses.append(row[:end])  # up to and including the first EOS
    return responses


@pytest.fixture(scope="module")
def unsteered(tiny):
    return _generate(tiny, None)


def _deltas(clusters, **by_cluster):
    values = [0.0] * clusters.n_clusters
    for cluster, value in by_cluster.items():
        values[int(cluster.removeprefix("c"))] = value
    return values


def test_zero_deltas_reproduce_unsteered_output_exactly(tiny, unsteered):
    clusters = tiny[3]
    steered = _generate(tiny, _deltas(clusters))
    assert torch.equal(unsteered, steered)


def test_large_positive_eos_delta_shortens_outputs(tiny, unsteered):
    clusters = tiny[3]
    before = [len(r) for r in _responses(tiny, unsteered)]
    after = [len(r) for r in _responses(tiny, _generate(tiny, _deltas(clusters, c0=8.0)))]
    assert all(a <= b for a, b in zip(after, before, strict=True))
    assert sum(after) < sum(before) / 2, (before, after)


def test_large_negative_numeric_delta_removes_digits(tiny, unsteered):
    model, tokenizer, inputs, clusters = tiny
    before = tokenizer.batch_decode(_responses(tiny, unsteered))
    assert any(ch.isdigit() for text in before for ch in text), before  # precondition
    steered = _responses(tiny, _generate(tiny, _deltas(clusters, c1=-50.0)))
    after = tokenizer.batch_decode(steered)
    assert not any(ch.isdigit() for text in after for ch in text), after
    assert not any(t in clusters.numeric_ids for r in steered for t in r)


def test_processed_scores_carry_the_bias_and_raw_logits_stay_raw(tiny):
    clusters = tiny[3]
    deltas = _deltas(clusters, c0=1.5, c1=-2.0, c2=0.75)
    out = _generate(
        tiny, deltas, return_dict_in_generate=True, output_scores=True, output_logits=True,
        max_length=None,
    )
    bias = torch.tensor(deltas)[torch.tensor(clusters.token_clusters)]  # (V,)
    for raw, processed in zip(out.logits, out.scores, strict=True):
        torch.testing.assert_close(processed - raw, bias.expand_as(raw), rtol=0, atol=1e-5)
