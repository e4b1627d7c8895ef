"""``LLMJudge`` against a real OpenAI-compatible HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crsp_ops.evaluation.correctness import JUDGE_SCHEMA, LLMJudge, parse_judge_reply


class _ChatServer:
    """Serves /v1/chat/completions with a queued reply content; records request bodies."""

    def __init__(self):
        self.replies: list[str] = []
        self.requests: list[dict] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server naming)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.requests.append({"path": self.path, "body": body})
                payload = json.dumps({
                    "id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                    "choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": outer.replies.pop(0)}}],
                }).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"


@pytest.fixture
def server():
    chat = _ChatServer()
    chat.thread.start()
    yield chat
    chat.httpd.shutdown()
    chat.httpd.server_close()


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
    body = server.requests[0]["body"]
    assert server.requests[0]["path"] == "/v1/chat/completions"
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
