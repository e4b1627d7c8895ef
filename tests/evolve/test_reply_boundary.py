"""Every reflector reply, however malformed, is a recorded failed attempt, never a crash.

The shapes are the ones that crashed evolve when it was tested from outside (a ~400-digit
integer, arrays nested 1,000 deep, ``content`` as a list, a choice without ``message``,
``usage.prompt_tokens`` as a string, a non-JSON body, a ``text/html`` 200, a lone surrogate in
the summary) plus duplicate keys and an oversized summary. They are served by a real HTTP
server on 127.0.0.1 to the real OpenAI client; a hypothesis property test then throws
arbitrary bytes and HTTP shapes at the boundary itself.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from evolve_testkit import fake_evaluate
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.reflector import ReflectorProposer, make_openai_client
from crsp_ops.evolve.reflector_reply import HttpReply, read_reply
from crsp_ops.evolve.reflector_schema import MAX_SUMMARY_CHARS
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.evolve.strict_json import InvalidJSON, loads
from tests.fakes import ScriptedJSONServer, chat_completion

N = 4
IDS = [str(i) for i in range(N)]
INITIAL = {"0": 0.0, "1": 0.0, "2": 0.5, "3": 0.0}
VALID = {"0": 0.25, "1": 0.0, "2": -1.0, "3": 0.1}
DESCRIPTIONS = {cid: {"description": f"cluster {cid}", "size": 1} for cid in IDS}
CLAMP = 5.0


def completion_bytes(content, **extra) -> bytes:
    body = chat_completion("", "m", usage={"prompt_tokens": 10, "completion_tokens": 5})
    body["choices"][0]["message"]["content"] = content
    body.update(extra)
    return json.dumps(body).encode()


def deep_content() -> str:
    return '{"deltas": ' + "[" * 1000 + "]" * 1000 + ', "summary": "deep"}'


# (name, status, body bytes, content type, what the recorded error must say)
BAD_SHAPES = [
    ("huge integer", 200, completion_bytes(
        '{"deltas": {"0": 1' + "0" * 400 + ', "1": 0, "2": 0, "3": 0}, "summary": "big"}'),
     "application/json", "digits"),
    ("nested 1000 deep", 200, completion_bytes(deep_content()), "application/json", "nested"),
    ("body nested 1000 deep", 200, b'{"choices": ' + b"[" * 1000 + b"]" * 1000 + b"}",
     "application/json", "nested"),
    ("content as a list", 200, completion_bytes([{"type": "text", "text": "{}"}]),
     "application/json", "content is list"),
    ("choice without message", 200, json.dumps(
        {"id": "x", "object": "chat.completion", "created": 0, "model": "m",
         "choices": [{"index": 0, "finish_reason": "stop"}]}).encode(),
     "application/json", "no message"),
    ("non-JSON body", 200, b"upstream timed out", "application/json", "not JSON"),
    ("text/html 200", 200, b"<html><body>Bad gateway</body></html>", "text/html", "text/html"),
    ("lone surrogate in summary", 200, completion_bytes(
        '{"deltas": {"0": 0, "1": 0, "2": 0, "3": 0}, "summary": "s\\ud800"}'),
     "application/json", "surrogate"),
    ("duplicate keys", 200, completion_bytes(
        '{"deltas": {"0": 9, "0": 0, "1": 0, "2": 0, "3": 0}, "summary": "dup"}'),
     "application/json", "duplicate key"),
    ("oversized summary", 200, completion_bytes(json.dumps(
        {"deltas": VALID, "summary": "x" * (MAX_SUMMARY_CHARS + 1)})),
     "application/json", "summary of"),
    ("NaN in the body", 200, completion_bytes("{}").replace(b'"{}"', b"NaN"),
     "application/json", "non-finite"),
    ("HTTP 500", 500, b'{"error": {"message": "boom"}}', "application/json", "500"),
]
GOOD = completion_bytes(json.dumps({"deltas": VALID, "summary": "Lowered filler."}))


def proposer_for(server, *, max_attempts: int = 1) -> ReflectorProposer:
    client = make_openai_client(base_url=server.base_url, api_key_env="TEST_REFLECTOR_KEY",
                                timeout_s=10.0)
    return ReflectorProposer(
        client, model="m", n_clusters=N, clamp=CLAMP, max_attempts=max_attempts,
        retry_backoff_s=0.0, temperature=0.0, max_tokens=100, k_longest=0,
        max_response_chars=0,
    )


@pytest.mark.server
def test_each_bad_shape_is_a_failed_iteration_and_the_loop_goes_on(tmp_path, monkeypatch):
    """One bad reply per iteration, then a valid one: the run finishes and adopts only VALID."""
    monkeypatch.setenv("TEST_REFLECTOR_KEY", "sk-test")
    script = [(status, body, 0.0, ctype) for _, status, body, ctype, _ in BAD_SHAPES]
    script.append((200, GOOD, 0.0, "application/json"))
    with ScriptedJSONServer(lambda body, count: script[count - 1]) as server:
        store = EvolutionStore(tmp_path, np.arange(N), N)
        outcome = run_evolution(
            pool=list(range(10)), evaluate=fake_evaluate, proposer=proposer_for(server),
            store=store, initial_deltas=INITIAL, cluster_descriptions=DESCRIPTIONS,
            config=LoopConfig(iterations=len(script), minibatch_size=3, seed=0,
                              stop_on_failure=False, paired_best=False),
        )
    rows = outcome.history
    assert len(server.bodies) == len(script)
    assert [row.proposal_failed for row in rows] == [True] * len(BAD_SHAPES) + [False]
    for row, (name, *_, why) in zip(rows, BAD_SHAPES, strict=False):
        assert why in row.proposal_error, (name, row.proposal_error)
    assert all(row.deltas == INITIAL for row in rows)  # nothing invalid was ever adopted
    assert json.loads((tmp_path / "deltas_current.json").read_text()) == VALID
    # every attempt is on disk, readable as UTF-8 (the lone surrogate is escaped)
    for iteration in range(len(script)):
        folder = tmp_path / "reflector" / f"iter_{iteration:03d}"
        record = json.loads((folder / "attempt_1_exchange.json").read_text("utf-8"))
        (folder / "attempt_1_reply.txt").read_text("utf-8")
        assert (record["error"] is None) == (iteration == len(BAD_SHAPES))
    summary = (tmp_path / "evolving_summary.md").read_text("utf-8")
    assert "Lowered filler." in summary and "\\ud800" not in summary
    print(f"\nbad shapes served: {len(BAD_SHAPES)}, failed iterations: "
          f"{sum(r.proposal_failed for r in rows)}, adopted: 1 valid reply")


def test_usage_with_a_string_counts_zero_tokens_and_keeps_the_reply():
    body = completion_bytes(json.dumps({"deltas": VALID, "summary": "ok"}),
                            usage={"prompt_tokens": "12", "completion_tokens": 3})
    outcome = read_reply(HttpReply(200, "application/json", body), n_clusters=N, clamp=CLAMP)
    assert outcome.reply is not None and outcome.reply.deltas == VALID
    assert (outcome.prompt_tokens, outcome.completion_tokens) == (0, 3)


def test_strict_json_rejects_what_plain_json_accepts():
    for text, why in [('{"a": 1, "a": 2}', "duplicate"), ("1" * 31, "digits"),
                      ("1e999", "out of range"), ('"\\udc00"', "surrogate"),
                      ("[" * 40 + "]" * 40, "nested"), ("Infinity", "non-finite")]:
        json.loads(text)  # the standard library takes every one of them
        with pytest.raises(InvalidJSON, match=why):
            loads(text, max_chars=10_000)
    with pytest.raises(InvalidJSON, match="UTF-8"):
        loads(b'"\xff"', max_chars=100)
    with pytest.raises(InvalidJSON, match="at most"):
        loads("[" + "0," * 100 + "0]", max_chars=50)


# --- property test: arbitrary JSON-ish bytes and HTTP shapes -------------------------------

json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True),
    st.text(), st.sampled_from(IDS),
)
json_values = st.recursive(
    json_leaf,
    lambda children: st.one_of(st.lists(children, max_size=4),
                               st.dictionaries(st.one_of(st.sampled_from(IDS), st.text()),
                                               children, max_size=5)),
    max_leaves=20,
)
deltas_like = st.dictionaries(st.sampled_from(IDS + ["4", "x"]), json_values, max_size=6)
reply_like = st.one_of(
    json_values,
    st.fixed_dictionaries({"deltas": st.one_of(deltas_like, json_values),
                           "summary": st.one_of(st.text(), json_values)}),
    st.fixed_dictionaries({"deltas": st.fixed_dictionaries(
        {cid: st.one_of(st.floats(), st.integers(), json_leaf) for cid in IDS}),
        "summary": st.text(min_size=0, max_size=50)}),
)


valid_reply = st.fixed_dictionaries({
    "deltas": st.fixed_dictionaries(
        {cid: st.one_of(st.floats(-10, 10), st.integers(-10, 10)) for cid in IDS}),
    "summary": st.text(min_size=1, max_size=40).filter(str.strip),
})


def _dumps(value) -> str:
    return json.dumps(value, allow_nan=True)


content_like = st.one_of(valid_reply.map(_dumps), reply_like.map(_dumps), st.text(),
                         reply_like.map(_dumps).map(lambda s: s[: len(s) // 2]))
envelope_like = st.one_of(
    valid_reply.map(_dumps).map(lambda c: completion_bytes(c)),
    content_like.map(lambda c: completion_bytes(c)),
    json_values.map(lambda c: completion_bytes(c)),
    json_values.map(lambda v: _dumps(v).encode()),
    st.builds(lambda c, u: completion_bytes(c, usage=u), content_like, json_values),
    st.binary(max_size=300),
    content_like.map(lambda c: completion_bytes(c)).flatmap(
        lambda b: st.integers(0, len(b)).map(lambda i: b[:i] + b"\xff" + b[i:])),
)


def assert_valid(outcome) -> None:
    reply = outcome.reply
    assert (reply is None) != (outcome.error is None)
    outcome.raw_reply.encode("utf-8")  # always writable
    if reply is None:
        assert isinstance(outcome.error, str) and outcome.error
        return
    assert list(reply.deltas) == IDS
    for value in reply.deltas.values():
        assert type(value) is float and math.isfinite(value) and -CLAMP <= value <= CLAMP
    assert reply.summary.strip() and len(reply.summary) <= MAX_SUMMARY_CHARS
    reply.summary.encode("utf-8")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(status=st.one_of(st.sampled_from([200, 201, 400, 401, 429, 500, 503]),
                        st.integers(100, 599)),
       content_type=st.sampled_from(["application/json", "text/html", "", "text/plain"]),
       body=envelope_like)
def test_any_reply_is_a_verdict_never_an_exception(status, content_type, body):
    outcome = read_reply(HttpReply(status, content_type, body), n_clusters=N, clamp=CLAMP)
    event("accepted" if outcome.reply is not None else "rejected")
    assert_valid(outcome)
    if not 200 <= status < 300:
        assert outcome.reply is None


class _RawResponse:
    """What ``with_raw_response.create`` returns, as the proposer uses it."""

    def __init__(self, status, content_type, body):
        self.status_code = status
        self.headers = {"content-type": content_type}
        self.http_response = type("R", (), {"content": body})()


class _ScriptedClient:
    """An OpenAI-client twin serving hypothesis-drawn raw replies, or raising as transports do."""

    api_key = "sk-property-test-key-000000"

    def __init__(self, replies):
        self.replies = list(replies)
        self.chat = self
        self.completions = self
        self.with_raw_response = self

    def create(self, **_request):
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        return _RawResponse(*reply)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(replies=st.lists(st.one_of(
    st.tuples(st.sampled_from([200, 200, 401, 500]),
              st.sampled_from(["application/json", "text/html"]), envelope_like),
    st.sampled_from([ConnectionError("reset"), TimeoutError("slow"), OSError("gone")]),
), min_size=3, max_size=3))
def test_proposer_never_raises_and_never_adopts_invalid_deltas(replies):
    from crsp_ops.evolve.iteration import Evidence

    proposer = ReflectorProposer(
        _ScriptedClient(replies), model="m", n_clusters=N, clamp=CLAMP, max_attempts=3,
        retry_backoff_s=0.0, temperature=0.0, max_tokens=10, k_longest=0,
        max_response_chars=0, sleep=lambda _s: None,
    )
    result = fake_evaluate(list(range(2)), INITIAL)
    proposal = proposer.propose(Evidence(
        iteration=0, deltas=INITIAL, records=result.records, scores={"composite_score": 0.5},
        best_composite=0.5, cluster_descriptions=DESCRIPTIONS))
    assert 1 <= len(proposal.exchanges) <= 3
    event("adopted" if proposal.deltas is not None else "failed proposal")
    for exchange in proposal.exchanges:
        assert (exchange.raw_reply or "").encode("utf-8") is not None
    if proposal.deltas is not None:
        assert list(proposal.deltas) == IDS
        assert all(math.isfinite(v) and abs(v) <= CLAMP for v in proposal.deltas.values())
        assert proposal.exchanges[-1].error is None
    else:
        assert proposal.failed and all(e.error for e in proposal.exchanges)
