"""The extra_body fields that carry deltas to SGLang and vLLM servers."""

from __future__ import annotations

import json
import math

import pytest

from crsp_ops.steering.request_fields import steering_request_fields
from crsp_ops.steering.sglang import sglang_processor_string


def test_sglang_fields_reuse_one_processor_string():
    first = steering_request_fields("sglang", [1.0, -2, 0.5])
    second = steering_request_fields("sglang", [0.0, 0.0, 0.0])
    assert first == {
        "custom_logit_processor": sglang_processor_string(),
        "custom_params": {"steer_deltas": [1.0, -2.0, 0.5]},
    }
    assert first["custom_logit_processor"] == second["custom_logit_processor"]
    assert "callable" in json.loads(first["custom_logit_processor"])
    json.dumps(first)  # plain JSON, ready for extra_body


def test_vllm_fields_are_a_flat_list():
    fields = steering_request_fields("vllm", (3, -1.25))
    assert fields == {"vllm_xargs": {"steer_deltas": [3.0, -1.25]}}
    assert all(type(v) is float for v in fields["vllm_xargs"]["steer_deltas"])


def test_unknown_engine_and_bad_deltas_are_clear_errors():
    with pytest.raises(ValueError, match="unknown steering engine 'tgi'.*sglang, vllm"):
        steering_request_fields("tgi", [1.0])
    with pytest.raises(ValueError, match="finite"):
        steering_request_fields("vllm", [1.0, math.nan])
    with pytest.raises(ValueError, match="empty"):
        steering_request_fields("sglang", [])
