"""Real minibatches with the tiny model through the in-process backend that ``open_backend`` builds."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from crsp_ops.config import load_settings
from crsp_ops.data.financebench import load_financebench
from crsp_ops.evaluation.correctness import grade
from crsp_ops.evaluation.minibatch_grading import grading_from_settings
from crsp_ops.evolve.minibatch import run_minibatch, score_records
from crsp_ops.inference.open_backend import open_backend, prompt_template, sampling_params
from crsp_ops.paths import copy_config_tree

REPO = Path(__file__).resolve().parents[2]
N_EXAMPLES = 6


def build_rule_table(model_dir: Path, out: Path, n_standin: int = 4) -> Path:
    """Cluster 0 = EOS/EOT, 1 = numeric (the stage's exact rules), the rest by ``id % 4 + 2``."""
    from transformers import AutoTokenizer, GenerationConfig

    from crsp_ops.steering.token_rules import eos_token_ids, numeric_symbol_ids, subword_prefix

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    eos = eos_token_ids(tokenizer, GenerationConfig.from_pretrained(model_dir).eos_token_id)
    texts = [tokenizer.decode([i]) for i in range(len(tokenizer))]
    table = np.arange(len(texts), dtype=np.int64) % n_standin + 2
    table[sorted(numeric_symbol_ids(texts, subword_prefix(tokenizer), excluded=eos))] = 1
    table[sorted(eos)] = 0
    out.mkdir(parents=True, exist_ok=True)
    np.save(out / "token_clusters.npy", table)
    (out / "clusters_meta.json").write_text(json.dumps({"n_clusters": n_standin + 2}))
    return out


@pytest.fixture(scope="module")
def settings(tmp_path_factory):
    root = tmp_path_factory.mktemp("project")
    copy_config_tree(REPO, root)
    overrides = ["model.device=cpu", "generation.max_new_tokens=48", "scoring.shortness_scale=32"]
    return load_settings(root, overrides, env={}).settings


@pytest.fixture(scope="module")
def clusters_dir(tiny_model_dir, tmp_path_factory):
    return build_rule_table(tiny_model_dir, tmp_path_factory.mktemp("clusters"))


@pytest.fixture(scope="module")
def examples():
    return load_financebench("synthetic", synthetic_count=N_EXAMPLES, seed=7).rows


@pytest.fixture(scope="module")
def backend(settings, tiny_model_dir, clusters_dir):
    with open_backend(settings, tiny_model_dir, clusters_dir) as opened:
        yield opened


def minibatch(settings, backend, examples, deltas):
    return run_minibatch(
        examples, backend, deltas, template=prompt_template(settings),
        sampling=sampling_params(settings), grade=grading_from_settings(settings.scoring),
    )


@pytest.fixture(scope="module")
def unsteered(settings, backend, examples):
    return minibatch(settings, backend, examples, None)


def test_records_follow_examples_and_grades(settings, unsteered, examples):
    assert [r.example_id for r in unsteered.records] == [e.financebench_id for e in examples]
    for record, example in zip(unsteered.records, examples, strict=True):
        assert record.question == example.question
        assert record.ground_truth == example.answer
        assert record.response_tokens == len(record.token_ids) > 0
        verdict = grade(record.answer, example.answer, rel_tol=settings.scoring.rel_tol)
        assert (record.is_correct, record.reasoning) == (verdict.is_correct, verdict.reasoning)
    # the tiny model was trained on this template: it answers with numbers, then stops
    assert all("answer" in r.answer.lower() for r in unsteered.records)
    assert any(r.finish_reason == "stop" for r in unsteered.records)
    grading = grading_from_settings(settings.scoring)
    assert unsteered.scores == score_records(unsteered.records, grading.weights)
    assert unsteered.deltas is None and unsteered.generation_s > 0


def test_zero_deltas_reproduce_unsteered_minibatch(settings, backend, examples, unsteered):
    zero = {str(i): 0.0 for i in range(6)}
    steered = minibatch(settings, backend, examples, zero)
    assert [r.token_ids for r in steered.records] == [r.token_ids for r in unsteered.records]
    assert steered.scores == unsteered.scores
    assert steered.deltas == (0.0,) * 6


def test_large_eos_delta_shortens_answers_and_moves_composite(
    settings, backend, examples, unsteered
):
    eos_boost = [6.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    steered = minibatch(settings, backend, examples, eos_boost)
    assert steered.scores.mean_token_length < unsteered.scores.mean_token_length
    assert steered.scores.shortness_score > unsteered.scores.shortness_score
    assert steered.scores.composite_score != pytest.approx(unsteered.scores.composite_score)
    lengths = [(s.response_tokens, u.response_tokens)
               for s, u in zip(steered.records, unsteered.records, strict=True)]
    assert all(short <= long for short, long in lengths)


def test_bad_deltas_are_rejected_before_generation(settings, backend, examples):
    with pytest.raises(ValueError, match="keys must be exactly"):
        minibatch(settings, backend, examples, {"0": 1.0, "5": 0.0})
    with pytest.raises(ValueError, match="6 clusters"):
        minibatch(settings, backend, examples, [0.0, 0.0])
    with pytest.raises(ValueError, match="at least one example"):
        minibatch(settings, backend, [], None)


def test_result_serialises_to_json(unsteered):
    data = json.loads(json.dumps(unsteered.to_json()))
    assert set(data["scores"]) == {
        "mean_token_length", "correctness_ratio", "shortness_score", "composite_score"
    }
    assert data["records"][0]["token_ids"] == list(unsteered.records[0].token_ids)
    assert unsteered.scores.as_metrics("heldout_")["heldout_composite_score"] == pytest.approx(
        unsteered.scores.composite_score
    )
