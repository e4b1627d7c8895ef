"""``grading_from_settings``: the numeric default and the LLM judge over real loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crsp_ops.config import load_settings
from crsp_ops.evaluation.minibatch_grading import grading_from_settings
from crsp_ops.paths import copy_config_tree
from tests.fakes import ScriptedJSONServer, chat_completion

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("project")
    copy_config_tree(REPO, path)
    return path


def _verdict(body: dict, count: int):
    verdict = {"is_correct": "grew 12.5" in body["messages"][0]["content"],
               "reasoning": "judge says so"}
    return 200, chat_completion(json.dumps(verdict), body["model"]), 0.0


@pytest.fixture
def judge_server():
    """A chat-completions endpoint that records requests and answers with a fixed verdict."""
    with ScriptedJSONServer(_verdict) as server:
        yield server.base_url, server.bodies


def test_numeric_default_grades_with_the_configured_tolerance(root):
    scoring = load_settings(root, ["scoring.rel_tol=0.05"], env={}).settings.scoring
    grading = grading_from_settings(scoring)
    assert grading.method == "numeric"
    assert grading.grade("The answer is $104 million.", "$100 million", "q").is_correct
    assert not grading.grade("The answer is $110 million.", "$100 million", "q").is_correct
    assert (grading.weights.shortness_weight, grading.weights.correctness_weight) == (0.4, 0.6)


def test_numeric_grader_reads_the_question(root):
    grading = grading_from_settings(load_settings(root, [], env={}).settings.scoring)
    answer, gold = "Capex was about $1.6 billion.", "1577"
    assert grading.grade(answer, gold, "What was capex (in USD millions)?").is_correct
    assert not grading.grade(answer, gold, "What was capex?").is_correct  # no unit implied
    assert not grading.grade("It could be 1,577 or 1,600.", gold, "Capex (in USD millions)?"
                             ).is_correct


def test_llm_judge_is_asked_through_the_configured_endpoint(root, judge_server, monkeypatch):
    url, seen = judge_server
    monkeypatch.delenv("CRSP_JUDGE_KEY", raising=False)
    scoring = load_settings(
        root, ["scoring.correctness=llm_judge", f"scoring.judge_base_url={url}",
               "scoring.judge_model=judge-1", "scoring.judge_api_key_env=CRSP_JUDGE_KEY"],
        env={},
    ).settings.scoring
    grading = grading_from_settings(scoring)
    right = grading.grade("It grew 12.5%.", "12.5%", "Growth?")
    wrong = grading.grade("It grew 3%.", "12.5%", "Growth?")
    assert (right.is_correct, wrong.is_correct) == (True, False)
    assert right.reasoning == "judge says so"
    assert seen[0]["model"] == "judge-1"
    assert seen[0]["response_format"]["json_schema"]["strict"] is True


def test_llm_judge_on_the_openai_api_needs_a_key(root, monkeypatch):
    monkeypatch.delenv("CRSP_JUDGE_KEY", raising=False)
    scoring = load_settings(
        root, ["scoring.correctness=llm_judge", "scoring.judge_api_key_env=CRSP_JUDGE_KEY"], env={}
    ).settings.scoring
    with pytest.raises(ValueError, match="CRSP_JUDGE_KEY"):
        grading_from_settings(scoring)


@pytest.mark.parametrize("module_name", [
    "crsp_ops.evolve.minibatch", "crsp_ops.evaluation.minibatch_grading",
    "crsp_ops.config.steering_config", "crsp_ops.inference.server_launch",
    "crsp_ops.cli.commands.deltas",
])
def test_docstring_examples(module_name):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(module_name))
    assert result.attempted > 0 and result.failed == 0
