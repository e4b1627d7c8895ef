"""The steering canary: passes where the processor is applied, fails loudly where it is not."""

from __future__ import annotations

import pytest

from crsp_ops.inference.canary import (
    CANARY_DELTA,
    SteeringCanaryError,
    canary_deltas,
    run_canary,
    steering_applied,
)
from crsp_ops.inference.completions import Completion
from crsp_ops.inference.openai_backend import OpenAIServerBackend, OpenAIServerSettings
from crsp_ops.inference.server_manager import ServerManager
from tests.inference.conftest import local_server_config, openai_base_url


def completion(ids, finish="length"):
    return Completion(text="", prompt_token_ids=(1,), token_ids=tuple(ids), logprobs=(),
                      finish_reason=finish)


def http_backend(manager, engine, **overrides):
    settings = OpenAIServerSettings(base_url=openai_base_url(manager), model="tiny",
                                    engine=engine, request_timeout_s=60.0, **overrides)
    return OpenAIServerBackend(settings, server=manager)


def test_canary_deltas_pick_the_cluster_to_move():
    table = [0, 2, 3, 1, 2]
    deltas, cluster = canary_deltas(4, completion([4, 3]), table)
    assert cluster == 2 and deltas == [0.0, 0.0, -CANARY_DELTA, 0.0]
    deltas, cluster = canary_deltas(4, completion([4, 3]), None)
    assert cluster == 0 and deltas[0] == CANARY_DELTA  # force EOS
    deltas, cluster = canary_deltas(4, completion([0], finish="stop"), None)
    assert cluster == 0 and deltas[0] == -CANARY_DELTA  # already EOS: forbid it
    with pytest.raises(ValueError, match="outside"):
        canary_deltas(2, completion([2]), table)
    assert not steering_applied(completion([4, 3]), completion([4, 3]), 2, table)
    assert not steering_applied(completion([4, 3]), completion([1, 3]), 2, table)  # same cluster
    assert steering_applied(completion([4, 3]), completion([3]), 2, table)


def test_canary_in_process(inprocess_backend, n_clusters, token_clusters):
    result = run_canary(inprocess_backend, n_clusters, token_clusters=token_clusters)
    assert result.steered_ids != result.unsteered_ids
    assert token_clusters[result.steered_ids[0]] != result.cluster


@pytest.mark.server
@pytest.mark.parametrize(("engine", "with_table"), [("vllm", True), ("sglang", False)])
def test_canary_passes_when_the_server_steers(steering_server, n_clusters, token_clusters,
                                             engine, with_table):
    with http_backend(steering_server, engine, n_clusters=n_clusters) as backend:
        result = run_canary(backend, n_clusters,
                            token_clusters=token_clusters if with_table else None)
    assert result.engine == engine and result.steered_ids != result.unsteered_ids


@pytest.mark.server
def test_canary_fails_loudly_on_a_server_without_the_table(tiny_model_dir, tmp_path, n_clusters,
                                                           token_clusters):
    config = local_server_config(tiny_model_dir, tmp_path / "plain.log")  # no --token-clusters
    with ServerManager(config) as manager:
        with http_backend(manager, "vllm") as backend:
            with pytest.raises(SteeringCanaryError, match="'vllm'.*--logits-processors"):
                run_canary(backend, n_clusters, token_clusters=token_clusters)
        with http_backend(manager, "sglang") as backend:
            with pytest.raises(SteeringCanaryError, match="--enable-custom-logit-processor"):
                run_canary(backend, n_clusters)
        assert "no --token-clusters table: ignored" in manager.log_tail(200)


def test_canary_fails_loudly_when_deltas_are_refused(tiny_model_dir, n_clusters):
    from crsp_ops.inference.transformers_backend import TransformersBackend

    with TransformersBackend.from_pretrained(tiny_model_dir, device="cpu") as backend:
        with pytest.raises(SteeringCanaryError, match="steered request failed.*token_clusters"):
            run_canary(backend, n_clusters, engine="transformers")
