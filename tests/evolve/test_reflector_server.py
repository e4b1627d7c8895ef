"""The reflector path against a real OpenAI-protocol HTTP server on 127.0.0.1.

The server checks every request (strict schema with exactly the cluster ids, the four inputs
in the user message, no example deltas) and replies, in turn, a valid proposal, a schema
violation, non-JSON and a NaN-carrying proposal. The loop must keep running, write every
exchange, and never adopt invalid deltas.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from evolve_testkit import fake_evaluate

from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.reflector import ReflectorProposer, make_openai_client
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.tracking import Tracker
from tests.fakes import ScriptedJSONServer, chat_completion

N_CLUSTERS = 4
IDS = [str(i) for i in range(N_CLUSTERS)]
DESCRIPTIONS = {cid: {"description": f"cluster-{cid}-meaning", "size": 1} for cid in IDS}
INITIAL = {"0": 0.0, "1": 0.0, "2": 0.5, "3": 0.0}
VALID = {"0": 0.25, "1": 0.0, "2": -1.0, "3": 0.1}
REPLIES = [
    json.dumps({"deltas": VALID, "summary": "Cluster 2 is filler; lowered it."}),
    json.dumps({"deltas": {**VALID, "9": 1.0}, "summary": "extra key"}),  # schema violation
    "Sure! Here are the deltas: 0=-1, 1=0",  # not JSON
    '{"deltas": {"0": NaN, "1": 0.0, "2": -2.0, "3": 0.0}, "summary": "nan"}',  # NaN
]


def check_request(body: dict, served: int) -> list[str]:
    """Problems with one chat-completions request (empty when it is as specified)."""
    problems = []
    fmt = body.get("response_format", {})
    schema = fmt.get("json_schema", {}).get("schema", {})
    deltas_schema = schema.get("properties", {}).get("deltas", {})
    if fmt.get("type") != "json_schema" or fmt["json_schema"].get("strict") is not True:
        problems.append("response_format is not a strict json_schema")
    if schema.get("required") != ["deltas", "summary"] or schema.get("additionalProperties"):
        problems.append("top level must require exactly deltas and summary")
    if sorted(deltas_schema.get("properties", {}), key=int) != IDS or \
            deltas_schema.get("required") != IDS or deltas_schema.get("additionalProperties"):
        problems.append("deltas schema must hold exactly the cluster ids")
    if any(p != {"type": "number"} for p in deltas_schema.get("properties", {}).values()):
        problems.append("delta values must be numbers")
    system, user = (m["content"] for m in body["messages"])
    if not all(DESCRIPTIONS[cid]["description"] in user for cid in IDS):
        problems.append("cluster descriptions missing")
    used = INITIAL if served == 0 else VALID  # invalid replies are never adopted
    if json.dumps(used) not in user:
        problems.append("deltas used for the minibatch missing")
    expected_summary = "First iteration" if served == 0 else "Cluster 2 is filler"
    if expected_summary not in user:
        problems.append("evolving summary missing")
    if user.count("### Example") != 3 or "Correct: yes" not in user or "Explanation:" not in user:
        problems.append("not every response with correctness and explanation")
    if "-0.35" in system + user or "deltas_examples" in system + user:
        problems.append("example deltas were sent")
    return problems


class FakeOpenAI(ScriptedJSONServer):
    """A chat-completions server on 127.0.0.1 that records and checks each request."""

    def __init__(self) -> None:
        self.problems: list[str] = []
        super().__init__(self._reply)

    def _reply(self, body: dict, count: int):
        served = count - 1
        self.problems += [f"request {served}: {p}" for p in check_request(body, served)]
        usage = {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        content = REPLIES[served % len(REPLIES)]
        return 200, chat_completion(content, body["model"], usage=usage, id=f"c{served}"), 0.0


class RecordingTracker(Tracker):
    """Keeps what the loop logs."""

    def __init__(self) -> None:
        self.metrics: dict[int, dict] = {}
        self.artifacts: list[str] = []

    def log_metrics(self, metrics, step):
        self.metrics.setdefault(step, {}).update(metrics)

    def log_artifact(self, local_path, artifact_path=None):
        self.artifacts.append(f"{artifact_path or ''}/{local_path.name}")


@pytest.mark.server
def test_reflector_loop_survives_invalid_replies(tmp_path, monkeypatch):
    monkeypatch.setenv("TEST_REFLECTOR_KEY", "sk-test")
    tracker = RecordingTracker()
    with FakeOpenAI() as server:
        client = make_openai_client(base_url=server.base_url, api_key_env="TEST_REFLECTOR_KEY",
                                    timeout_s=10.0)
        proposer = ReflectorProposer(
            client, model="gpt-4o", n_clusters=N_CLUSTERS, clamp=5.0, max_attempts=1,
            retry_backoff_s=0.0, temperature=0.0, max_tokens=500, k_longest=0,
            max_response_chars=0,
        )
        store = EvolutionStore(tmp_path, np.arange(N_CLUSTERS), N_CLUSTERS)
        outcome = run_evolution(
            pool=list(range(10)), evaluate=fake_evaluate, proposer=proposer, store=store,
            initial_deltas=INITIAL, cluster_descriptions=DESCRIPTIONS,
            config=LoopConfig(iterations=5, minibatch_size=3, seed=0, stop_on_failure=False,
                              paired_best=False),
            tracker=tracker,
        )
    assert server.problems == []
    assert len(server.bodies) == 5
    history = outcome.history
    assert [row.proposal_failed for row in history] == [False, True, True, True, False]
    # Only the valid reply was ever adopted: every later iteration evaluated VALID.
    assert [row.deltas for row in history] == [INITIAL] + [VALID] * 4
    assert "9" not in json.loads((tmp_path / "deltas_current.json").read_text())
    errors = [r.proposal_error for r in history if r.proposal_failed]
    for error, why in zip(errors, ["unexpected ['9']", "not JSON", "non-finite"], strict=True):
        assert why in error
    # Every exchange is on disk (messages + raw reply) and logged as an artifact.
    for iteration, reply in enumerate(REPLIES + REPLIES[:1]):
        folder = tmp_path / "reflector" / f"iter_{iteration:03d}"
        sent = json.loads((folder / "attempt_1_messages.json").read_text())
        assert [m["role"] for m in sent["messages"]] == ["system", "user"]
        assert (folder / "attempt_1_reply.txt").read_text() == reply
        assert f"reflector/iter_{iteration:03d}/attempt_1_reply.txt" in tracker.artifacts
    assert tracker.metrics[0]["reflector_total_tokens"] == 120
    assert tracker.metrics[0]["reflector_latency_s"] > 0
    assert tracker.metrics[4]["reflector_tokens_cumulative"] == 600
    assert "Cluster 2 is filler" in (tmp_path / "evolving_summary.md").read_text()


@pytest.mark.server
def test_reflector_retries_until_valid(tmp_path, monkeypatch):
    """Within one iteration, invalid replies are retried; the first valid one is adopted."""
    monkeypatch.setenv("TEST_REFLECTOR_KEY", "sk-test")
    with FakeOpenAI() as server:
        server.bodies.extend([{}] * 1)  # start the reply cycle at the schema violation
        proposer = ReflectorProposer(
            make_openai_client(base_url=server.base_url, api_key_env="TEST_REFLECTOR_KEY",
                               timeout_s=10.0),
            model="m", n_clusters=N_CLUSTERS, clamp=None, max_attempts=4, retry_backoff_s=0.0,
            temperature=0.0, max_tokens=100, k_longest=2, max_response_chars=5,
        )
        from crsp_ops.evolve.iteration import Evidence

        result = fake_evaluate(list(range(3)), INITIAL)
        proposal = proposer.propose(Evidence(
            iteration=0, deltas=INITIAL, records=result.records, scores={"composite_score": 0.5},
            best_composite=0.5, cluster_descriptions=DESCRIPTIONS,
        ))
    assert proposal.deltas == VALID
    assert [e.error is None for e in proposal.exchanges] == [False, False, False, True]
    user = server.bodies[-1]["messages"][1]["content"]
    assert user.count("### Example") == 2 and "[…truncated]" in user


def test_missing_api_key_is_a_clear_error(monkeypatch):
    """The OpenAI API needs a key; a local server gets the dummy one (it ignores keys)."""
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    with pytest.raises(ValueError, match=r"\$NO_SUCH_KEY_VAR and \$OPENAI_API_KEY are not set"):
        make_openai_client(base_url="https://api.openai.com/v1", api_key_env="NO_SUCH_KEY_VAR",
                           timeout_s=1.0)
    local = make_openai_client(base_url="http://127.0.0.1:9/v1", api_key_env="NO_SUCH_KEY_VAR",
                               timeout_s=1.0)
    assert local.api_key == "EMPTY" and str(local.base_url) == "http://127.0.0.1:9/v1/"
