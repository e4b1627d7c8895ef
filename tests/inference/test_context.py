import logging
import os

import numpy as np
import pytest
from openai.types.chat.chat_completion import Choice

from crsp_ops.inference.completions import Completion
from crsp_ops.inference.context import InferenceContext, PromptAlignmentError
from crsp_ops.inference.hf_token_pieces import detect_piece_style, piece_to_bytes
from crsp_ops.inference.transformers_backend import completion_to_choice

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# leading-space words, punctuation, digits, accented and CJK text, and an emoji that byte-level
# vocabularies split into partial-UTF-8 byte tokens
MIXED_TEXT = " Hello, world! 12345 + 67 = café 🦙 東京."
PROMPT = "What is 2+2?"


@pytest.fixture(scope="module")
def tokenizer(tiny_model_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)


@pytest.fixture
def ctx(tokenizer):
    return InferenceContext(tokenizer)


def choice_for(tokenizer, token_ids, *, prompt_token_ids=(), logprobs=None):
    logprobs = logprobs if logprobs is not None else [-0.25] * len(token_ids)
    completion = Completion(
        text=tokenizer.decode(token_ids, skip_special_tokens=True),
        prompt_token_ids=tuple(prompt_token_ids),
        token_ids=tuple(token_ids),
        logprobs=tuple(logprobs),
        finish_reason="length",
        logprob_semantics="processed",
    )
    return completion_to_choice(completion, tokenizer)


def without_engine_ids(choice):
    return {k: v for k, v in choice.items() if k not in ("token_ids", "prompt_token_ids")}


@pytest.fixture(scope="module")
def mixed_ids(tokenizer):
    ids = tokenizer.encode(MIXED_TEXT, add_special_tokens=False)
    pieces = tokenizer.convert_ids_to_tokens(ids)
    # the round-trip tests below are only meaningful if every kind of token is present
    assert any(p[:1] in ("Ġ", "▁") and len(p) > 1 for p in pieces), pieces
    assert any(tokenizer.decode([i]).strip() in {",", "!", ".", "+", "="} for i in ids), pieces
    assert any(tokenizer.decode([i]).strip().isdigit() for i in ids), pieces
    assert any("\ufffd" in tokenizer.decode([i]) for i in ids), pieces  # partial UTF-8 bytes
    return ids


# ---- tokenize_prompt ---------------------------------------------------------------------


def test_tokenize_prompt_applies_chat_template(ctx, tokenizer):
    tokens = ctx.tokenize_prompt(PROMPT)
    expected = tokenizer.apply_chat_template(
        [{"role": "user", "content": PROMPT}], tokenize=True, add_generation_prompt=True,
        return_dict=False,
    )
    assert tokens.dtype == np.int32
    assert tokens.tolist() == list(expected)
    plain = tokenizer.encode(PROMPT, add_special_tokens=False)
    assert tokens.tolist() != plain
    assert len(tokens) > len(plain)
    assert set(tokens.tolist()) & set(tokenizer.all_special_ids), "template adds special tokens"


def test_tokenize_prompt_accepts_v4_style_list_result(tokenizer):
    class ListReturningTokenizer:  # transformers v4: apply_chat_template returns bare ids
        def __init__(self, inner):
            self._inner = inner

        def __getattr__(self, name):
            return getattr(self._inner, name)

        def apply_chat_template(self, *args, **kwargs):
            return list(self._inner.apply_chat_template(*args, **kwargs)["input_ids"])

    v4 = InferenceContext(ListReturningTokenizer(tokenizer)).tokenize_prompt(PROMPT)
    assert v4.tolist() == InferenceContext(tokenizer).tokenize_prompt(PROMPT).tolist()


def test_tokenize_prompt_multi_turn(ctx, tokenizer):
    messages = [
        {"role": "user", "content": PROMPT},
        {"role": "assistant", "content": "4"},
        {"role": "user", "content": "And 3+3?"},
    ]
    single = ctx.tokenize_prompt(PROMPT).tolist()
    multi = ctx.tokenize_prompt(messages).tolist()
    text = tokenizer.decode(multi)
    assert len(multi) > len(single)
    assert PROMPT in text and "And 3+3?" in text
    assert text.index(PROMPT) < text.index("And 3+3?")
    # both end with the same generation prompt
    suffix = ctx.tokenize_prompt("x").tolist()[-3:]
    assert multi[-3:] == suffix == single[-3:]


@pytest.mark.parametrize("prompt", ["", "   ", [], [{"role": "user", "content": ""}]])
def test_tokenize_prompt_rejects_empty(ctx, prompt):
    with pytest.raises(ValueError, match="nothing to tokenize: prompt"):
        ctx.tokenize_prompt(prompt)


def test_tokenize_prompt_rejects_malformed_message(ctx):
    with pytest.raises(ValueError, match="needs string 'role' and 'content'"):
        ctx.tokenize_prompt([{"role": "user"}])


def test_no_chat_template_uses_documented_fallback_and_warns(tiny_model_dir, caplog):
    from transformers import AutoTokenizer

    bare = AutoTokenizer.from_pretrained(tiny_model_dir, local_files_only=True)
    bare.chat_template = None
    ctx = InferenceContext(bare)
    with caplog.at_level(logging.WARNING, logger="crsp_ops.inference.context"):
        tokens = ctx.tokenize_prompt([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": PROMPT},
        ])
    text = f"system: Be brief.\nuser: {PROMPT}\nassistant:"
    expected = bare.encode(text, add_special_tokens=True)
    assert tokens.tolist() == expected
    assert "no chat template" in caplog.text
    assert ctx.stats()["template_fallbacks"] == 1


# ---- alignment ---------------------------------------------------------------------------


def test_alignment_check_catches_plain_encode(ctx, tokenizer):
    ours = ctx.tokenize_prompt(PROMPT)
    plain = tokenizer.encode(PROMPT)
    first_diff = next(i for i, (a, b) in enumerate(zip(ours, plain, strict=False)) if a != b)
    with pytest.raises(PromptAlignmentError, match=f"at position {first_diff}") as error:
        ctx.check_prompt_alignment(ours, plain)
    message = str(error.value)
    assert repr(tokenizer.convert_ids_to_tokens(int(ours[first_diff]))) in message
    assert repr(tokenizer.convert_ids_to_tokens(int(plain[first_diff]))) in message
    ctx.check_prompt_alignment(ours, list(ours))  # identical ids pass
    assert ctx.stats()["prompt_alignment_checks"] == 2
    assert ctx.stats()["prompt_alignment_mismatches"] == 1


def test_alignment_check_reports_length_difference(ctx):
    ours = ctx.tokenize_prompt(PROMPT).tolist()
    with pytest.raises(PromptAlignmentError, match=f"position {len(ours)}.*<end of prompt>"):
        ctx.check_prompt_alignment(ours + [5], ours)


def test_create_rollout_checks_server_prompt_ids(ctx, tokenizer, mixed_ids):
    choice = choice_for(tokenizer, mixed_ids, prompt_token_ids=tokenizer.encode(PROMPT))
    with pytest.raises(PromptAlignmentError):
        ctx.create_rollout_from_choice(PROMPT, choice, "math", "ex1", 1.0)
    # vLLM reports the prompt ids on the response: passed explicitly, they win
    good = ctx.tokenize_prompt(PROMPT).tolist()
    rollout = ctx.create_rollout_from_choice(
        PROMPT, choice, "math", "ex1", 1.0, server_prompt_token_ids=good
    )
    assert rollout.prompt_tokens.tolist() == good
    assert ctx.stats()["prompt_alignment_mismatches"] == 1


# ---- response tokens ---------------------------------------------------------------------


def test_engine_token_ids_are_preferred(ctx, tokenizer, mixed_ids):
    choice = choice_for(tokenizer, mixed_ids)
    choice["logprobs"]["content"][0]["token"] = "definitely-not-a-token"  # never consulted
    assert ctx.response_tokens_from_choice(choice).tolist() == mixed_ids
    assert ctx.stats()["engine_token_ids"] == 1


def test_sdk_choice_with_token_ids_in_model_extra(ctx, tokenizer, mixed_ids):
    sdk_choice = Choice.model_validate(choice_for(tokenizer, mixed_ids))
    assert "token_ids" in sdk_choice.model_extra
    assert ctx.response_tokens_from_choice(sdk_choice).tolist() == mixed_ids
    assert ctx.logprobs_from_choice(sdk_choice).tolist() == [-0.25] * len(mixed_ids)


@pytest.mark.parametrize("keep_bytes", [True, False])
def test_piece_round_trip_recovers_every_id(ctx, tokenizer, mixed_ids, keep_bytes):
    choice = without_engine_ids(choice_for(tokenizer, mixed_ids))
    if not keep_bytes:
        for item in choice["logprobs"]["content"]:
            item["bytes"] = None
    assert ctx.response_tokens_from_choice(choice).tolist() == mixed_ids
    sdk_choice = Choice.model_validate(choice)
    assert ctx.response_tokens_from_choice(sdk_choice).tolist() == mixed_ids


def test_decoded_text_tokens_with_bytes_round_trip(ctx, tokenizer, mixed_ids):
    """OpenAI-style items: ``token`` is decoded text (lossy for byte tokens), ``bytes`` exact."""
    style = detect_piece_style(tokenizer)
    content = [
        {
            "token": tokenizer.decode([i]),
            "logprob": -1.0,
            "bytes": list(piece_to_bytes(tokenizer.convert_ids_to_tokens(i), style)),
        }
        for i in mixed_ids
    ]
    recovered = ctx.response_tokens_from_choice({"logprobs": {"content": content}})
    assert recovered.tolist() == mixed_ids


def test_lossy_decoded_byte_token_without_bytes_is_an_error(ctx, tokenizer, mixed_ids):
    partial = next(i for i in mixed_ids if "\ufffd" in tokenizer.decode([i]))
    choice = {"logprobs": {"content": [{"token": tokenizer.decode([partial]), "logprob": -1.0}]}}
    with pytest.raises(ValueError, match="lossy.*return_token_ids"):
        ctx.response_tokens_from_choice(choice)


def test_vllm_token_id_form(ctx, tokenizer, mixed_ids):
    content = [{"token": f"token_id:{i}", "logprob": -1.0, "bytes": None} for i in mixed_ids]
    assert ctx.response_tokens_from_choice({"logprobs": {"content": content}}).tolist() == mixed_ids
    too_big = {"logprobs": {"content": [{"token": f"token_id:{len(tokenizer)}", "logprob": -1}]}}
    with pytest.raises(ValueError, match="outside this tokenizer"):
        ctx.response_tokens_from_choice(too_big)


def test_unknown_token_error_says_how_to_fix(ctx):
    choice = {"logprobs": {"content": [{"token": "<no such token>", "logprob": -1.0}]}}
    with pytest.raises(ValueError, match="position 0.*return_token_ids"):
        ctx.response_tokens_from_choice(choice)


@pytest.mark.parametrize("logprobs", [None, {"content": None}])
def test_missing_logprobs_error_says_how_to_fix(ctx, logprobs):
    choice = {"message": {"content": "4"}, "logprobs": logprobs}
    with pytest.raises(ValueError, match="logprobs=True"):
        ctx.response_tokens_from_choice(choice)
    with pytest.raises(ValueError, match="logprobs=True"):
        ctx.logprobs_from_choice(choice)


def test_zero_tokens_is_an_error(ctx):
    with pytest.raises(ValueError, match="zero response tokens"):
        ctx.response_tokens_from_choice({"logprobs": {"content": []}})
    with pytest.raises(ValueError, match="zero response tokens"):
        ctx.response_tokens_from_choice({"token_ids": [], "logprobs": None})


@pytest.mark.parametrize("field", ["token_ids", "response_token_ids"])
def test_logprob_count_must_match_token_ids(ctx, tokenizer, mixed_ids, field):
    choice = choice_for(tokenizer, mixed_ids)
    choice[field] = choice.pop("token_ids")[:-1]  # vLLM's or SGLang 0.5.23's spelling
    with pytest.raises(ValueError, match="token ids but .* logprobs"):
        ctx.logprobs_from_choice(choice)
    counts = f"{len(mixed_ids) - 1} token ids but {len(mixed_ids)} logprobs"
    with pytest.raises(ValueError, match=counts):  # create_rollout_from_choice checks it too
        ctx.create_rollout_from_choice(PROMPT, choice, "math", "ex1", 1.0,
                                       server_prompt_token_ids=ctx.tokenize_prompt(PROMPT))


# ---- rollouts ----------------------------------------------------------------------------


def test_create_rollout_from_choice(ctx, tokenizer, mixed_ids):
    logprobs = [-0.1 * (k + 1) for k in range(len(mixed_ids))]
    prompt_ids = ctx.tokenize_prompt(PROMPT).tolist()
    choice = Choice.model_validate(
        choice_for(tokenizer, mixed_ids, prompt_token_ids=prompt_ids, logprobs=logprobs)
    )
    rollout = ctx.create_rollout_from_choice(PROMPT, choice, "math", "ex7", 0.5)
    assert rollout.env_name == "math" and rollout.env_example_id == "ex7"
    assert rollout.prompt_tokens.tolist() == prompt_ids
    assert rollout.response_tokens.tolist() == mixed_ids
    np.testing.assert_allclose(rollout.response_logprobs, logprobs, rtol=1e-6)
    assert rollout.token_rewards.tolist() == [0.5] * len(mixed_ids)
    assert rollout.episode_reward == 0.5
    assert rollout.logprob_semantics == "processed"  # read from the choice
    stats = ctx.stats()
    assert stats["rollouts"] == 1 and stats["prompt_alignment_checks"] == 1


def test_create_rollout_semantics_default_and_override(ctx, tokenizer, mixed_ids):
    choice = without_engine_ids(choice_for(tokenizer, mixed_ids))
    del choice["logprob_semantics"]
    assert ctx.create_rollout_from_choice(PROMPT, choice, "m", "1", 1.0).logprob_semantics == "raw"
    override = ctx.create_rollout_from_choice(
        PROMPT, choice, "m", "1", 1.0, logprob_semantics="processed",
        token_rewards=[0.0] * (len(mixed_ids) - 1) + [1.0],
    )
    assert override.logprob_semantics == "processed"
    assert override.token_rewards[-1] == 1.0 and override.token_rewards[:-1].sum() == 0
    assert ctx.stats()["prompt_alignment_unchecked"] == 2


def test_short_response_warns_and_counts(ctx, tokenizer, mixed_ids, caplog):
    choice = choice_for(tokenizer, mixed_ids[:2])
    with caplog.at_level(logging.WARNING, logger="crsp_ops.inference.context"):
        rollout = ctx.create_rollout_from_choice(
            PROMPT, without_engine_ids(choice), "math", "ex9", 0.0
        )
    assert len(rollout.response_tokens) == 2
    assert "only 2 response tokens for math/ex9" in caplog.text
    assert ctx.stats()["short_responses"] == 1
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="crsp_ops.inference.context"):
        ctx.create_rollout_from_choice(PROMPT, without_engine_ids(choice), "math", "ex10", 0.0)
    assert ctx.stats()["short_responses"] == 2 and "ex10" not in caplog.text  # counted only
    ctx.reset_stats()
    assert set(ctx.stats().values()) == {0}


def test_create_rollout_rejects_empty_prompt(ctx, tokenizer, mixed_ids):
    with pytest.raises(ValueError, match="nothing to tokenize"):
        ctx.create_rollout_from_choice("", choice_for(tokenizer, mixed_ids), "math", "ex1", 1.0)


# ---- create_rollout_from_completion: no round trip through a choice dict ----------------


def _completion(tokenizer, token_ids, *, prompt_token_ids=(), semantics="processed"):
    return Completion(
        text=tokenizer.decode(token_ids, skip_special_tokens=True),
        prompt_token_ids=tuple(prompt_token_ids), token_ids=tuple(token_ids),
        logprobs=tuple(-0.1 * (i + 1) for i in range(len(token_ids))) if semantics != "none"
        else (), finish_reason="stop", logprob_semantics=semantics)


def test_rollout_from_completion_equals_rollout_from_its_choice(ctx, tokenizer, mixed_ids):
    prompt_ids = ctx.tokenize_prompt(PROMPT).tolist()
    completion = _completion(tokenizer, mixed_ids, prompt_token_ids=prompt_ids)
    direct = ctx.create_rollout_from_completion(PROMPT, completion, "env", "ex-1", 0.5)
    via_choice = ctx.create_rollout_from_choice(
        PROMPT, completion_to_choice(completion, tokenizer), "env", "ex-1", 0.5)
    assert direct.response_tokens.tolist() == list(mixed_ids)
    assert direct.response_tokens.dtype == via_choice.response_tokens.dtype
    np.testing.assert_array_equal(direct.prompt_tokens, via_choice.prompt_tokens)
    np.testing.assert_array_equal(direct.response_tokens, via_choice.response_tokens)
    np.testing.assert_allclose(direct.response_logprobs, via_choice.response_logprobs)
    assert direct.logprob_semantics == "processed"


def test_rollout_from_completion_checks_the_engine_prompt_and_logprobs(ctx, tokenizer):
    plain = tokenizer.encode(PROMPT, add_special_tokens=False)  # no chat template: drift
    with pytest.raises(PromptAlignmentError):
        ctx.create_rollout_from_completion(
            PROMPT, _completion(tokenizer, [5, 6], prompt_token_ids=plain), "env", "x", 0.0)
    with pytest.raises(ValueError, match="no logprobs"):
        ctx.create_rollout_from_completion(
            PROMPT, _completion(tokenizer, [5, 6], semantics="none"), "env", "x", 0.0)
    ctx.create_rollout_from_completion(PROMPT, _completion(tokenizer, [5, 6]), "env", "x", 0.0)
    assert ctx.stats()["prompt_alignment_unchecked"] == 1
