import math
import os

import numpy as np
import pytest
import torch

from crsp_ops.inference.completions import SamplingParams
from crsp_ops.inference.context import InferenceContext, PromptAlignmentError
from crsp_ops.inference.transformers_backend import (
    TransformersBackend,
    completion_to_choice,
    resolve_device,
)

os.environ.setdefault("HF_HUB_OFFLINE", "1")

GREEDY = SamplingParams(max_new_tokens=48, temperature=0.0, top_p=1.0)


@pytest.fixture(scope="module")
def backend(tiny_model_dir):
    return TransformersBackend.from_pretrained(tiny_model_dir, device="cpu")


@pytest.fixture(scope="module")
def ctx(backend):
    return InferenceContext(backend.tokenizer)


@pytest.fixture(scope="module")
def conversations(tiny_prompt_template):
    """Two in-distribution FinanceBench prompts of different lengths (so one is left-padded)."""
    from crsp_ops.data.financebench import load_financebench

    rows = load_financebench("synthetic", synthetic_count=3, seed=0).rows
    return [
        [{"role": "user", "content": tiny_prompt_template.format(
            evidence=" ".join(e.evidence_text for e in row.evidence), question=row.question
        )}]
        for row in (rows[0], rows[2])
    ]


MULTI_TURN = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "What is 2+2?"},
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "And 3+3?"},
]


@pytest.fixture(scope="module")
def greedy(backend, conversations):
    return backend.generate(conversations, GREEDY)


def teacher_forced_logprobs(model, prompt_ids, response_ids, temperature=1.0):
    ids = torch.tensor([list(prompt_ids) + list(response_ids)])  # (1, P + R)
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0].float() / temperature  # (P + R, V)
    start = len(prompt_ids)
    predicted = torch.log_softmax(logits[start - 1 : -1], dim=-1)  # (R, V)
    return predicted.gather(1, ids[0, start:, None])[:, 0].numpy()  # (R,)


def test_prompt_ids_fed_to_model_equal_tokenize_prompt(backend, ctx, conversations):
    seen = []

    def record(module, args, kwargs):
        if not seen:  # the prefill call carries the whole left-padded prompt batch
            seen.append((kwargs["input_ids"].clone(), kwargs["attention_mask"].clone()))

    batch = [*conversations, MULTI_TURN]
    handle = backend.model.register_forward_pre_hook(record, with_kwargs=True)
    try:
        completions = backend.generate(batch, SamplingParams(2, 0.0, 1.0))
    finally:
        handle.remove()

    input_ids, attention_mask = seen[0]  # (B, P)
    lengths = {int(mask.sum()) for mask in attention_mask}
    assert len(lengths) >= 2, "prompts of different lengths, so some rows are left-padded"
    for row, conversation in enumerate(batch):
        fed = input_ids[row][attention_mask[row].bool()].tolist()
        expected = ctx.tokenize_prompt(conversation).tolist()
        assert fed == expected
        assert list(completions[row].prompt_token_ids) == expected
        assert attention_mask[row, -1] == 1  # left padding: the prompt ends at the last column

    # the broken pattern: re-encoding the user text by hand differs, and the check catches it
    user_text = conversations[0][0]["content"]
    plain = backend.tokenizer.encode(user_text)
    assert plain != list(completions[0].prompt_token_ids)
    with pytest.raises(PromptAlignmentError, match="position 0"):
        ctx.check_prompt_alignment(plain, completions[0].prompt_token_ids)


def test_greedy_response_stops_at_end_of_turn(backend, greedy):
    im_end = backend.tokenizer.convert_tokens_to_ids("<|im_end|>")
    for completion in greedy:
        assert completion.finish_reason == "stop"
        assert completion.token_ids[-1] == im_end  # end-of-turn kept as the last token
        assert not set(completion.token_ids[:-1]) & set(backend.stop_ids)  # no padding after it
        assert "<|im_end|>" not in completion.text
        assert completion.text == backend.tokenizer.decode(
            list(completion.token_ids), skip_special_tokens=True
        )


def test_length_limit(backend, conversations):
    (completion,) = backend.generate(conversations[:1], SamplingParams(3, 0.0, 1.0))
    assert completion.finish_reason == "length"
    assert len(completion.token_ids) == 3


def test_budget_is_clipped_to_the_model_context(backend, conversations, monkeypatch, caplog):
    """Prompt + max_new_tokens past max_position_embeddings: the budget shrinks (issue 43)."""
    prompt = len(backend.generate(conversations[:1], SamplingParams(1, 0.0, 1.0))[0]
                 .prompt_token_ids)
    monkeypatch.setattr(backend.model.config, "max_position_embeddings", prompt + 2)
    monkeypatch.setattr(backend, "_clip_warned", False)
    with caplog.at_level("WARNING"):
        (completion,) = backend.generate(conversations[:1], SamplingParams(40, 0.0, 1.0))
    assert len(completion.token_ids) <= 2
    assert "exceed the model's context" in caplog.text
    monkeypatch.setattr(backend.model.config, "max_position_embeddings", prompt)
    with pytest.raises(ValueError, match="leaves no room"):
        backend.generate(conversations[:1], SamplingParams(4, 0.0, 1.0))


def test_greedy_logprobs_match_a_teacher_forced_forward(backend, greedy):
    for completion in greedy:
        expected = teacher_forced_logprobs(
            backend.model, completion.prompt_token_ids, completion.token_ids
        )
        np.testing.assert_allclose(completion.logprobs, expected, atol=1e-4)
        assert completion.logprob_semantics == "processed"
        # unsteered greedy: nothing processed the logits, so both views agree
        assert completion.extra["raw_logprobs"] == completion.extra["processed_logprobs"]


def test_batched_generation_matches_one_at_a_time(backend, conversations, greedy):
    for conversation, batched in zip(conversations, greedy, strict=True):
        (alone,) = backend.generate([conversation], GREEDY)
        assert alone.token_ids == batched.token_ids
        np.testing.assert_allclose(alone.logprobs, batched.logprobs, atol=1e-4)


def test_small_batch_size_chunks_in_order(backend, conversations, greedy):
    chunked = TransformersBackend(backend.model, backend.tokenizer, device="cpu", batch_size=1)
    assert [c.token_ids for c in chunked.generate(conversations, GREEDY)] == [
        c.token_ids for c in greedy
    ]


def test_seeded_sampling_is_reproducible_and_processed(backend, conversations):
    params = SamplingParams(max_new_tokens=16, temperature=0.7, top_p=1.0, seed=11)
    state = torch.get_rng_state()
    first = backend.generate(conversations, params)
    assert torch.equal(torch.get_rng_state(), state), "seeding must not touch the caller's RNG"
    second = backend.generate(conversations, params)
    assert [c.token_ids for c in first] == [c.token_ids for c in second]
    other = backend.generate(conversations, SamplingParams(16, 1.5, 1.0, seed=12))
    assert [c.token_ids for c in other] != [c.token_ids for c in first]

    completion = first[0]
    processed = teacher_forced_logprobs(
        backend.model, completion.prompt_token_ids, completion.token_ids, temperature=0.7
    )
    raw = teacher_forced_logprobs(backend.model, completion.prompt_token_ids, completion.token_ids)
    np.testing.assert_allclose(completion.extra["processed_logprobs"], processed, atol=1e-4)
    np.testing.assert_allclose(completion.extra["raw_logprobs"], raw, atol=1e-4)
    assert completion.logprobs == completion.extra["processed_logprobs"]


def test_raw_semantics_backend(backend, conversations):
    raw_backend = TransformersBackend(
        backend.model, backend.tokenizer, device="cpu", logprob_semantics="raw"
    )
    (completion,) = raw_backend.generate(conversations[:1], SamplingParams(8, 0.7, 1.0, seed=1))
    assert completion.logprob_semantics == "raw"
    assert completion.logprobs == completion.extra["raw_logprobs"]
    assert completion.logprobs != completion.extra["processed_logprobs"]


def test_custom_stop_token_truncates_at_first_occurrence(backend, conversations, greedy):
    reference = list(greedy[0].token_ids)
    stop = reference[len(reference) // 2]
    expected_length = reference.index(stop) + 1
    stopper = TransformersBackend(
        backend.model, backend.tokenizer, device="cpu", stop_token_ids=[stop]
    )
    (completion,) = stopper.generate(conversations[:1], GREEDY)
    assert list(completion.token_ids) == reference[:expected_length]
    assert completion.finish_reason == "stop"


def test_completion_to_choice_is_openai_shaped(backend, greedy):
    completion = greedy[0]
    choice = completion_to_choice(completion, backend.tokenizer, index=3)
    assert choice["index"] == 3
    assert choice["message"] == {"role": "assistant", "content": completion.text}
    assert choice["finish_reason"] == "stop"
    assert choice["token_ids"] == list(completion.token_ids)
    assert choice["prompt_token_ids"] == list(completion.prompt_token_ids)
    content = choice["logprobs"]["content"]
    assert [c["token"] for c in content] == backend.tokenizer.convert_ids_to_tokens(
        list(completion.token_ids)
    )
    assert [c["logprob"] for c in content] == list(completion.logprobs)
    spelled = b"".join(bytes(c["bytes"]) for c in content)
    decoded = backend.tokenizer.decode(list(completion.token_ids), skip_special_tokens=False)
    assert spelled == decoded.encode("utf-8")


def test_generated_tokens_round_trip_through_choice_strings(backend, ctx, conversations):
    # a hot sampler reaches all corners of the 512-token vocabulary, partial UTF-8 bytes included
    hot = SamplingParams(max_new_tokens=48, temperature=5.0, top_p=1.0, seed=0)
    completions = backend.generate(conversations, hot) + backend.generate(conversations, GREEDY)
    decode = backend.tokenizer.decode
    all_ids = [i for c in completions for i in c.token_ids]
    assert any("\ufffd" in decode([i]) for i in all_ids), "no byte token generated"
    assert any(decode([i]).startswith(" ") for i in all_ids)
    assert any(decode([i]).strip().isdigit() for i in all_ids)
    assert any(decode([i]).strip() in {",", ".", "$", "!", "?"} for i in all_ids)
    for completion in completions:
        choice = completion_to_choice(completion, backend.tokenizer)
        del choice["token_ids"]  # force the token-string path
        assert ctx.response_tokens_from_choice(choice).tolist() == list(completion.token_ids)


def test_rollout_from_in_process_choice(backend, ctx, conversations, greedy):
    for row, (conversation, completion) in enumerate(zip(conversations, greedy, strict=True)):
        choice = completion_to_choice(completion, backend.tokenizer)
        rollout = ctx.create_rollout_from_choice(conversation, choice, "finance", str(row), 1.0)
        assert rollout.prompt_tokens.tolist() == list(completion.prompt_token_ids)
        assert rollout.response_tokens.tolist() == list(completion.token_ids)
        np.testing.assert_allclose(rollout.response_logprobs, completion.logprobs, rtol=1e-6)
        assert rollout.logprob_semantics == "processed"


def test_no_chat_template_backend_uses_the_same_fallback(tiny_model_dir, backend, conversations):
    from transformers import AutoTokenizer

    bare = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    bare.chat_template = None
    plain = TransformersBackend(backend.model, bare, device="cpu")
    (completion,) = plain.generate(conversations[1:], SamplingParams(2, 0.0, 1.0))
    expected = InferenceContext(bare).tokenize_prompt(conversations[1]).tolist()
    assert list(completion.prompt_token_ids) == expected
    assert bare.decode(expected).rstrip().endswith("assistant:")


# ---- steering ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def steered(backend):
    pytest.importorskip("crsp_ops.steering.hf")
    clusters = np.ones(len(backend.tokenizer), dtype=np.int64)  # cluster 1: every token ...
    clusters[list(backend.stop_ids)] = 0  # ... but the stop tokens, cluster 0
    return TransformersBackend(backend.model, backend.tokenizer, device="cpu",
                               token_clusters=clusters)


def test_zero_deltas_reproduce_unsteered_output(steered, conversations, greedy):
    for plain, zero in zip(greedy, steered.generate(conversations, GREEDY, deltas=[0.0, 0.0]),
                           strict=True):
        assert zero.token_ids == plain.token_ids
        np.testing.assert_allclose(zero.logprobs, plain.logprobs, atol=1e-6)


def test_steering_changes_output_and_logprob_semantics(steered, conversations, greedy):
    ended = steered.generate(conversations, GREEDY, deltas=[50.0, 0.0])
    for completion in ended:
        assert len(completion.token_ids) == 1 and completion.token_ids[0] in steered.stop_ids
        assert completion.finish_reason == "stop"
        # processed: nearly all mass on the stop tokens; raw: the policy itself was not sure
        stop_mass_floor = -math.log(len(steered.stop_ids)) - 1e-3
        assert completion.logprobs[0] > stop_mass_floor
        assert completion.extra["raw_logprobs"][0] < completion.logprobs[0] - 1.0
    never_end = steered.generate(conversations[:1], GREEDY, deltas=[-100.0, 0.0])[0]
    assert never_end.finish_reason == "length" and len(never_end.token_ids) == 48
    assert greedy[0].finish_reason == "stop"


def top_p_logprobs(logits: torch.Tensor, chosen: torch.Tensor, top_p: float) -> np.ndarray:
    """log-softmax at ``chosen`` after keeping the smallest top-probability set of mass top_p."""
    probs = torch.softmax(logits, dim=-1)  # (R, V)
    sorted_probs, order = probs.sort(dim=-1, descending=True)
    outside = (sorted_probs.cumsum(-1) - sorted_probs) >= top_p  # mass before it already >= p
    keep = torch.zeros_like(probs, dtype=torch.bool).scatter(-1, order, ~outside)
    kept = torch.log_softmax(logits.masked_fill(~keep, float("-inf")), dim=-1)
    return kept.gather(1, chosen[:, None])[:, 0].numpy()


def test_steered_top_p_sampling_records_what_was_sampled_from(steered, conversations):
    # processed = log softmax(top_p((z + bias) / T)) at the sampled token; raw = log softmax(z)
    deltas, temperature, top_p = [-1.5, 0.25], 0.8, 0.9
    params = SamplingParams(max_new_tokens=24, temperature=temperature, top_p=top_p, seed=3)
    bias = torch.tensor(deltas)[torch.as_tensor(steered.token_clusters)]  # (V,)
    for completion in steered.generate(conversations, params, deltas=deltas):
        prompt, response = list(completion.prompt_token_ids), list(completion.token_ids)
        ids = torch.tensor([prompt + response])
        with torch.inference_mode():
            logits = steered.model(input_ids=ids).logits[0, len(prompt) - 1 : -1].float()
        chosen = ids[0, len(prompt):]
        np.testing.assert_allclose(
            completion.extra["processed_logprobs"],
            top_p_logprobs((logits + bias) / temperature, chosen, top_p), atol=1e-4)
        np.testing.assert_allclose(
            completion.extra["raw_logprobs"],
            torch.log_softmax(logits, -1).gather(1, chosen[:, None])[:, 0].numpy(), atol=1e-4)


def test_generation_keeps_no_per_step_scores(steered, conversations, monkeypatch):
    # full-vocabulary scores per generated token are what made generation memory grow with
    # length; the recorders keep one step, so generate() must not be asked for them
    seen = []
    original = steered.model.generate

    def spy(*args, **kwargs):
        config = kwargs["generation_config"]
        seen.append((config.output_scores, config.output_logits))
        output = original(*args, **kwargs)
        assert getattr(output, "scores", None) is None and getattr(output, "logits", None) is None
        return output

    monkeypatch.setattr(steered.model, "generate", spy)
    steered.generate(conversations, SamplingParams(8, 0.7, 0.9, seed=0), deltas=[0.5, 0.0])
    assert seen and all(not scores and not logits for scores, logits in seen)


def test_deltas_are_validated(backend, steered, conversations):
    with pytest.raises(ValueError, match="without token_clusters"):
        backend.generate(conversations, GREEDY, deltas=[0.0, 0.0])
    with pytest.raises(ValueError, match="3 deltas for a table of 2 clusters"):
        steered.generate(conversations, GREEDY, deltas=[0.0, 0.0, 0.0])


# ---- setup -------------------------------------------------------------------------------


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA error")
def test_cuda_without_cuda_is_a_clear_error(tiny_model_dir):
    with pytest.raises(RuntimeError, match="CUDA is not available"):
        TransformersBackend.from_pretrained(tiny_model_dir, device="cuda")


def test_device_and_path_validation(tmp_path):
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device("auto").type in ("cpu", "cuda")
    with pytest.raises(ValueError, match="'auto', 'cpu' or 'cuda"):
        resolve_device("tpu")
    with pytest.raises(FileNotFoundError, match="no config.json"):
        TransformersBackend.from_pretrained(tmp_path, device="cpu")


def test_close_is_idempotent_and_final(backend, conversations):
    spare = TransformersBackend(backend.model, backend.tokenizer, device="cpu")
    spare.close()
    spare.close()
    with pytest.raises(RuntimeError, match="after close"):
        spare.generate(conversations, GREEDY)
