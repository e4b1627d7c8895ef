import pytest

from crsp_ops.inference.request_options import ENGINES, rollout_request_options


def test_vllm_asks_for_token_ids_and_names_its_logprobs_mode():
    options = rollout_request_options("vllm")
    kwargs = options.create_kwargs(model="m", messages=[], temperature=0.0)
    assert kwargs["logprobs"] is True
    assert kwargs["model"] == "m" and kwargs["temperature"] == 0.0
    assert kwargs["extra_body"] == {"return_token_ids": True, "return_tokens_as_token_ids": True}
    assert options.logprob_semantics == "raw"
    assert options.server_args == ("--logprobs-mode", "raw_logprobs")
    assert options.returns_token_ids and options.returns_prompt_token_ids

    processed = rollout_request_options("vllm", logprob_semantics="processed")
    assert processed.server_args == ("--logprobs-mode", "processed_logprobs")
    assert processed.logprob_semantics == "processed"


def test_sglang_asks_for_response_and_prompt_ids():
    options = rollout_request_options("sglang")
    kwargs = options.create_kwargs()
    assert kwargs["logprobs"] is True
    assert kwargs["extra_body"] == {"return_token_ids": True, "return_prompt_token_ids": True}
    assert options.logprob_semantics == "processed"
    with pytest.raises(ValueError, match="sglang returns 'processed' logprobs only"):
        rollout_request_options("sglang", logprob_semantics="raw")


def test_generic_openai_server_only_needs_logprobs():
    options = rollout_request_options("openai")
    assert options.create_kwargs() == {"logprobs": True}
    assert not options.returns_token_ids and not options.returns_prompt_token_ids


def test_caller_extra_body_is_merged_but_cannot_switch_rollout_fields_off():
    options = rollout_request_options("vllm")
    kwargs = options.create_kwargs(extra_body={"vllm_xargs": {"steer_deltas": [0.5, -1.0]}})
    assert kwargs["extra_body"] == {
        "return_token_ids": True,
        "return_tokens_as_token_ids": True,
        "vllm_xargs": {"steer_deltas": [0.5, -1.0]},
    }
    assert "vllm_xargs" not in options.extra_body  # the shared options are not mutated
    with pytest.raises(ValueError, match="logprobs=False would break rollouts on vllm"):
        options.create_kwargs(logprobs=False)
    with pytest.raises(ValueError, match="return_token_ids=False would break"):
        options.create_kwargs(extra_body={"return_token_ids": False})


def test_unknown_engine_and_semantics():
    with pytest.raises(ValueError, match="unknown engine 'tgi'"):
        rollout_request_options("tgi")
    with pytest.raises(ValueError, match="'raw' or 'processed'"):
        rollout_request_options("vllm", logprob_semantics="none")
    assert set(ENGINES) == {"vllm", "sglang", "openai"}
