"""``LLMJudge`` against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import pytest

from crsp_ops.evaluation.correctness import JUDGE_SCHEMA, LLMJudge, parse_judge_reply
from tests.fakes import ScriptedJSONServer, chat_completion


@pytest.fixture
def server():
    """A chat endpoint answering with queued reply contents (``server.replies``)."""
    replies: list[str] = []
    chat = ScriptedJSONServer(lambda body, count: (200, chat_completion(replies.pop(0), body["model"]), 0.0))
    chat.replies = replies
    with chat:
        yield chat


@pytest.fixture
def judge(server):
    import openai

    client = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=10)
    return LLMJudge(client, model="judge-model", rel_tol=0.01)


def test_judge_sends_strict_schema_and_parses_both_verdicts(server, judge):
    server.replies += [
        json.dumps({"is_correct": True, "reasoning": "Both say $1.2 billion."}),
        json.dumps({"is_correct": False, "reasoning": "41 is not 42."}),
    ]
    right = judge.grade("Final answer: $1.2bn", "$1,200 million", question="Revenue?")
    wrong = judge.grade("41", "42", question="What?")
    assert (right.is_correct, right.reasoning) == (True, "Both say $1.2 billion.")
    assert (wrong.is_correct, wrong.reasoning) == (False, "41 is not 42.")
    body = server.bodies[0]
    assert server.paths[0] == "/v1/chat/completions"
    assert body["model"] == "judge-model" and body["temperature"] == 0.0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert fmt["json_schema"]["schema"] == JUDGE_SCHEMA
    prompt = body["messages"][0]["content"]
    assert "Revenue?" in prompt and "$1,200 million" in prompt and "$1.2bn" in prompt


def test_judge_rejects_replies_outside_the_schema(server, judge):
    server.replies.append(json.dumps({"is_correct": "yes", "reasoning": "sure"}))
    with pytest.raises(ValueError, match="wrong types"):
        judge.grade("1", "1", question="q")


@pytest.mark.parametrize(
    "content",
    [None, "not json", '["is_correct"]', '{"is_correct": true}',
     '{"is_correct": true, "reasoning": "r", "extra": 1}'],
)
def test_parse_judge_reply_is_strict(content):
    with pytest.raises(ValueError):
        parse_judge_reply(content)


def test_judge_prompt_states_the_grading_rules_and_the_question(server, judge):
    server.replies.append(json.dumps({"is_correct": True, "reasoning": "1.42% is 0.01 at 2dp"}))
    verdict = judge.grade("The ratio is 1.42%.", "0.01",
                          question="What is the ratio? Round to two decimal places.")
    assert verdict.is_correct
    prompt = server.bodies[0]["messages"][0]["content"]
    assert "Round to two decimal places." in prompt and "0.01" in prompt and "1.42%" in prompt
    for rule in ("(in USD millions)", "basis points", "coarser of the two precisions",
                 "decrease of 3.2%", "refuses", "several candidate values", "1.00%"):
        assert rule in prompt, rule


def test_judge_without_a_question_says_so(server, judge):
    server.replies.append(json.dumps({"is_correct": False, "reasoning": "no"}))
    judge.grade("41", "42")
    assert "Question: (not given)" in server.bodies[0]["messages"][0]["content"]
