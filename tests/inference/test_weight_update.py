"""In-place weight updates against a fake engine over real HTTP: call order and every failure."""

from __future__ import annotations

import pytest

from crsp_ops.inference.weight_update import (
    VLLM_DEV_MODE_ENV,
    WeightUpdateError,
    http_post,
    update_weights,
)
from tests.inference.fake_engine import SGLANG_NOT_FLUSHED, FakeEngine

pytestmark = pytest.mark.server

VLLM_SEQUENCE = ["/pause?mode=wait", "/collective_rpc", "/reset_prefix_cache", "/resume"]


def run(engine_name, faults=None, timeout_s=5.0):
    with FakeEngine(faults) as engine:
        try:
            update = update_weights(engine_name, http_post(engine.url, timeout_s), "/w/step-2",
                                    version="step-2")
        except WeightUpdateError as error:
            return engine, error
        return engine, update


def test_vllm_pauses_reloads_resets_and_resumes_in_that_order():
    engine, update = run("vllm")
    assert engine.paths() == VLLM_SEQUENCE == list(update.calls)
    assert engine.calls[1][2] == {"method": "reload_weights",
                                  "kwargs": {"weights_path": "/w/step-2"}}
    assert update.seconds >= 0 and update.note == ""


def test_vllm_without_dev_mode_fails_on_pause_and_says_so():
    engine, error = run("vllm", {"/pause": {"status": 404}})
    assert isinstance(error, WeightUpdateError)
    assert "404" in str(error) and VLLM_DEV_MODE_ENV in str(error)
    assert engine.paths() == ["/pause?mode=wait"]  # never paused: nothing to resume


@pytest.mark.parametrize("fault", [{"status": 400}, {"status": 500},
                                   {"body": {"error": "shape mismatch"}}])
def test_a_failed_reload_still_resumes_the_server(fault):
    engine, error = run("vllm", {"/collective_rpc": fault})
    assert isinstance(error, WeightUpdateError)
    assert engine.paths() == ["/pause?mode=wait", "/collective_rpc", "/resume"]


def test_a_reload_that_times_out_fails_and_resumes():
    engine, error = run("vllm", {"/collective_rpc": {"sleep": 1.5}}, timeout_s=0.5)
    assert isinstance(error, WeightUpdateError) and "Timeout" in str(error)
    assert engine.paths() == ["/pause?mode=wait", "/collective_rpc", "/resume"]


def test_a_failed_resume_is_an_error():
    _, error = run("vllm", {"/resume": {"status": 500}})
    assert isinstance(error, WeightUpdateError) and "/resume" in str(error)


def test_sglang_updates_from_disk_with_a_cache_flush_and_a_version():
    engine, update = run("sglang")
    assert engine.paths() == ["/update_weights_from_disk"]
    assert engine.calls[0][2] == {"model_path": "/w/step-2", "flush_cache": True,
                                  "weight_version": "step-2"}
    assert update.note == ""


def test_sglang_cache_not_flushed_counts_as_loaded_and_flushes_after():
    not_flushed = {"body": {"success": False, "message": SGLANG_NOT_FLUSHED}}
    engine, update = run("sglang", {"/update_weights_from_disk": not_flushed})
    assert engine.paths() == ["/update_weights_from_disk", "/flush_cache"]
    assert "cache was not flushed" in update.note


def test_sglang_cache_not_flushed_and_a_failing_flush_is_still_loaded():
    faults = {"/update_weights_from_disk": {"body": {"success": False,
                                                     "message": SGLANG_NOT_FLUSHED}},
              "/flush_cache": {"status": 400}}
    engine, update = run("sglang", faults)
    assert not isinstance(update, WeightUpdateError)
    assert engine.paths() == ["/update_weights_from_disk", "/flush_cache"]


@pytest.mark.parametrize("answer", [{"success": False, "message": "Failed to load: no such file"},
                                    {"unexpected": 1}])
def test_sglang_refusals_are_errors(answer):
    _, error = run("sglang", {"/update_weights_from_disk": {"body": answer}})
    assert isinstance(error, WeightUpdateError)


def test_sglang_400_is_an_error():
    _, error = run("sglang", {"/update_weights_from_disk": {"status": 400}})
    assert isinstance(error, WeightUpdateError) and "400" in str(error)


def test_engines_without_an_in_place_path_are_refused_without_a_call():
    engine, error = run("openai")
    assert isinstance(error, WeightUpdateError) and engine.paths() == []
