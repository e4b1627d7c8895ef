"""The reflector's prompt fits its model's context, and a refused request stops the run cleanly.

The rule (``reflector_context.fit_prompt``) is checked on its own with a counting stub; the
proposer against a loopback server that reports ``max_model_len`` and tokenizes as vLLM does;
and ``crsp-ops evolve`` against servers that cannot be reached, serve another model, or answer
400 for a prompt over their context: one line, exit code 2, no MLflow run left RUNNING.
"""

from __future__ import annotations

import json

import pytest
from evolve_testkit import FakeRecord, fake_evaluate, make_project

from crsp_ops.cli.main import main
from crsp_ops.config import ConfigError
from crsp_ops.evolve.iteration import Evidence
from crsp_ops.evolve.reflector import ReflectorProposer, ReflectorRefused, make_openai_client
from crsp_ops.evolve.reflector_context import (
    MIN_RESPONSE_CHARS,
    PromptTooLong,
    fit_prompt,
)
from crsp_ops.evolve.reflector_prompt import SummaryEntry
from crsp_ops.evolve.reflector_server import prompt_fit
from tests.fakes import ScriptedJSONServer, chat_completion

# --- the rule, pure --------------------------------------------------------------------------


def record(i: int, tokens: int) -> FakeRecord:
    return FakeRecord(f"q{i}", "?", "1", "x" * (10 * tokens), tokens, True, "ok")


def render(records, entries, chars):
    """Messages whose size is the sum of what is shown (answers capped at ``chars``)."""
    shown = [r.answer[:chars] if chars else r.answer for r in records]
    body = "|".join(shown) + "#" + "|".join(e.text for e in entries)
    return [{"role": "system", "content": "S" * 100}, {"role": "user", "content": body}]


def count(messages):
    return sum(len(m["content"]) for m in messages)


RESPONSES = [record(0, 30), record(1, 10), record(2, 50), record(3, 10), record(4, 20)]
SUMMARY = [SummaryEntry(0, "a" * 40), SummaryEntry(1, "b" * 40), SummaryEntry(2, "c" * 40)]


def fit(budget, responses=RESPONSES, summary=SUMMARY, max_chars=0):
    return fit_prompt(responses, summary, render=render, count=count, budget=budget,
                      lengths=[r.response_tokens for r in responses],
                      max_response_chars=max_chars)


def shown_answers(fitted) -> list[int]:
    user = fitted.messages[1]["content"].split("#")[0]
    return [len(a) for a in user.split("|")]


def test_a_prompt_within_the_budget_is_sent_as_built():
    fitted = fit(10_000)
    assert fitted.cut is False and fitted.tokens == count(render(RESPONSES, SUMMARY, 0))
    assert shown_answers(fitted) == [300, 100, 500, 100, 200]


def test_responses_are_dropped_shortest_first_in_their_order():
    # everything: 100 system + 1200 answers + 4 separators + "#" + 122 summary = 1427
    fitted = fit(1350)  # dropping q3 (100 chars, the later of the two shortest) is enough
    assert shown_answers(fitted) == [300, 100, 500, 200]
    assert (fitted.dropped_responses, fitted.dropped_summary_entries) == (1, 0)
    assert fitted.tokens == 1326 and fitted.cut
    assert shown_answers(fit(1100)) == [300, 500]  # then q1 and q4 (200 chars): 1024


def test_then_the_oldest_summary_entries_then_the_last_response_is_halved():
    fitted = fit(650)  # the longest response alone is 723; then the summary, oldest first
    assert shown_answers(fitted) == [500] and fitted.tokens == 641
    assert fitted.dropped_summary_entries == 2 and "c" * 40 in fitted.messages[1]["content"]
    assert fit(700).dropped_summary_entries == 1
    halved = fit(400)  # the one response and the latest entry stay; its characters halve
    assert shown_answers(halved) == [250] and halved.response_chars == 250
    assert halved.truncated and halved.dropped_responses == 4


def test_a_prompt_that_cannot_fit_raises():
    with pytest.raises(PromptTooLong, match="over its budget of 150"):
        fit(150)  # the system message alone is 100; 64 characters of answer are the floor
    assert shown_answers(fit(100 + MIN_RESPONSE_CHARS + 1 + 40)) == [MIN_RESPONSE_CHARS]


# --- the proposer against a server that reports its context and tokenizes ------------------

N = 4
DESCRIPTIONS = {str(i): {"description": f"cluster {i}"} for i in range(N)}
INITIAL = {str(i): 0.0 for i in range(N)}
REPLY = json.dumps({"deltas": {**INITIAL, "2": -1.0}, "summary": "Lowered 2."})


class VllmLike(ScriptedJSONServer):
    """``/v1/models`` with ``max_model_len``, ``/tokenize`` (4 characters a token), chat."""

    def __init__(self, *, context: int, chat_status: int = 200, chat_body: dict | None = None):
        self.context = context
        super().__init__(self._post, get=self._get)
        self.chat_status, self.chat_body = chat_status, chat_body

    def _get(self, path):
        return 200, {"object": "list", "data": [
            {"id": "smol", "object": "model", "owned_by": "vllm",
             "max_model_len": self.context}]}

    def _post(self, body, count):
        if "response_format" not in body:  # /tokenize
            text = "".join(m["content"] for m in body["messages"])
            return 200, {"count": len(text) // 4, "max_model_len": self.context}, 0.0
        if self.chat_status != 200:
            return self.chat_status, self.chat_body, 0.0
        return 200, chat_completion(REPLY, body["model"]), 0.0


def evidence(n: int = 8) -> Evidence:
    result = fake_evaluate(list(range(n)), {**INITIAL, "2": 3.0})
    return Evidence(iteration=0, deltas=INITIAL, records=result.records,
                    scores={"composite_score": 0.5}, best_composite=0.5,
                    cluster_descriptions=DESCRIPTIONS)


def proposer_for(server, max_tokens: int = 64) -> ReflectorProposer:
    client = make_openai_client(base_url=server.base_url, api_key_env="NO_KEY_HERE",
                                timeout_s=10.0)
    fit = prompt_fit(client, model="smol", max_tokens=max_tokens, context_tokens=0,
                     tokenizer="", timeout_s=10.0)
    return ReflectorProposer(client, model="smol", n_clusters=N, clamp=5.0, max_attempts=1,
                             retry_backoff_s=0.0, temperature=0.0, max_tokens=max_tokens,
                             k_longest=0, max_response_chars=0, prompt_fit=fit)


@pytest.mark.server
def test_a_prompt_over_the_context_is_cut_counted_by_the_server(caplog):
    with VllmLike(context=4096) as server:
        wide = proposer_for(server).propose(evidence())
        server.context = 1000  # the instructions alone count about 600 tokens
        proposal = proposer_for(server).propose(evidence())
    assert wide.metrics["reflector_prompt_cut"] == 0.0
    assert server.paths.count("/tokenize") >= 2
    sent = [b for b in server.bodies if "response_format" in b][-1]["messages"]
    assert sum(len(m["content"]) for m in sent) // 4 <= 1000 - 64
    assert sent[1]["content"].count("### Example") < 8
    assert proposal.deltas is not None  # the cut prompt was answered and adopted
    assert proposal.metrics["reflector_prompt_cut"] == 1.0
    assert proposal.metrics["reflector_prompt_dropped_responses"] >= 1
    assert proposal.metrics["reflector_invalid_replies"] == 0.0
    assert "reflector prompt cut to" in caplog.text


@pytest.mark.server
def test_a_schema_the_server_rejects_raises_one_line():
    refusal = {"object": "error", "type": "BadRequestError", "code": 400,
               "message": "Unsupported JSON schema keyword:\n additionalProperties"}
    with VllmLike(context=4096, chat_status=400, chat_body=refusal) as server:
        with pytest.raises(ReflectorRefused, match="structured outputs") as caught:
            proposer_for(server).propose(evidence())
    assert "\n" not in str(caught.value) and "HTTP 400" in str(caught.value)


@pytest.mark.server
def test_a_reply_budget_over_the_context_is_a_config_error():
    with VllmLike(context=1024) as server, pytest.raises(ConfigError,
                                                         match="reflector.max_tokens=2000"):
        proposer_for(server, max_tokens=2000)


# --- crsp-ops evolve: bad reflector inputs are one line and exit code 2 ---------------------

SETS = ["evolve.iterations=2", "evolve.minibatch_size=2", "evolve.heldout_size=1",
        "generation.max_new_tokens=8", "evolve.registry_enabled=n", "evolve.proposer=reflector",
        "reflector.max_attempts=3", "reflector.model=smol"]


def evolve(root, monkeypatch, *sets):
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    return main(["evolve", *[a for item in [*SETS, *sets] for a in ("--set", item)]])


def run_statuses(root) -> list[str]:
    from mlflow.tracking import MlflowClient

    if not (root / "mlflow.db").exists():
        return []
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    return [run.info.status for e in client.search_experiments()
            for run in client.search_runs([e.experiment_id])]


def error_lines(capsys) -> list[str]:
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("crsp-ops evolve:")]


@pytest.mark.server
@pytest.mark.parametrize("case", ["unreachable", "unknown model"])
def test_a_bad_endpoint_fails_before_the_run(case, tmp_path, evolve_inputs, monkeypatch,
                                              capsys):
    root = make_project(tmp_path / "proj", evolve_inputs)
    with VllmLike(context=4096) as server:
        url = "http://127.0.0.1:9/v1" if case == "unreachable" else server.base_url
        model = "smol" if case == "unreachable" else "gpt-4o"
        code = evolve(root, monkeypatch, f"reflector.base_url={url}", f"reflector.model={model}")
    assert code == 2
    lines = error_lines(capsys)
    assert len(lines) == 1
    assert ("cannot reach" if case == "unreachable" else "serves ['smol']") in lines[0]
    assert run_statuses(root) == []  # no run was opened


@pytest.mark.server
def test_a_400_for_length_stops_with_one_line_and_no_running_run(tmp_path, evolve_inputs,
                                                                  monkeypatch, capsys):
    root = make_project(tmp_path / "proj", evolve_inputs)
    too_long = {"error": {"message": "This model's maximum context length is 2048 tokens. "
                                     "However, you requested 2301 tokens.",
                          "type": "invalid_request_error", "code": 400}}
    with VllmLike(context=4096, chat_status=400, chat_body=too_long) as server:
        code = evolve(root, monkeypatch, f"reflector.base_url={server.base_url}")
        chats = [b for b in server.bodies if "response_format" in b]
    assert code == 2
    lines = error_lines(capsys)
    assert len(lines) == 1 and "HTTP 400" in lines[0] and "maximum context length" in lines[0]
    assert "reflector.context_tokens" in lines[0]
    assert len(chats) == 1  # refused: not retried
    statuses = run_statuses(root)
    assert statuses == ["FAILED"]
    history = root / "outputs" / "evolution" / "history.json"
    assert not history.exists() or json.loads(history.read_text()) == []  # not committed
