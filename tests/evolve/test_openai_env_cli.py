"""`crsp-ops evolve` and `mlflow run . -e evolve` with nothing but OPENAI_BASE_URL set reach
that reflector server."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from evolve_testkit import REPO, make_project

from crsp_ops.cli.main import main
from tests.fakes import ScriptedJSONServer, chat_completion
from tests.recipes.conftest import recipe_env


def propose_from_schema(body: dict, count: int):
    """A valid reflector reply: every cluster id the request's strict schema requires."""
    schema = body["response_format"]["json_schema"]["schema"]
    ids = schema["properties"]["deltas"]["required"]
    reply = {"deltas": {cid: -0.5 if cid == "0" else 0.0 for cid in ids},
             "summary": "Lowered cluster 0."}
    return 200, chat_completion(json.dumps(reply), body["model"]), 0.0


@pytest.mark.server
def test_openai_base_url_alone_selects_and_reaches_the_reflector(tmp_path, evolve_inputs,
                                                                 monkeypatch):
    root = make_project(tmp_path / "proj", evolve_inputs)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    with ScriptedJSONServer(propose_from_schema) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)  # no key, no reflector.* option
        code = main(["evolve", "--set", "evolve.iterations=2", "--set", "evolve.minibatch_size=2",
                     "--set", "generation.max_new_tokens=8", "--set", "tracking.enabled=n",
                     "--set", "evolve.registry_enabled=n"])
    assert code == 0
    assert len(server.bodies) == 2  # one proposal per finished iteration
    assert server.paths == ["/v1/chat/completions"] * 2
    assert server.bodies[0]["model"] == "gpt-4o"  # reflector.model's default
    assert server.headers[0]["authorization"] == "Bearer EMPTY"  # no key anywhere: dummy key
    history = json.loads((root / "outputs" / "evolution" / "history.json").read_text())
    assert [row["proposal_failed"] for row in history] == [False, False]
    assert history[1]["deltas"]["0"] == -0.5  # iteration 1 evaluated the reflector's deltas


@pytest.mark.slow  # ~1-2 min: `mlflow run` starts a fresh process for the whole job
@pytest.mark.server
def test_mlflow_run_evolve_reaches_openai_base_url(tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    shutil.copy(REPO / "MLproject", root / "MLproject")
    with ScriptedJSONServer(propose_from_schema) as server:
        env = {**recipe_env(root), "OPENAI_BASE_URL": server.base_url}
        done = subprocess.run(
            ["mlflow", "run", ".", "-e", "evolve", "--env-manager", "local",
             "--experiment-name", "crsp-evolve", "-P", "iterations=2", "-P", "minibatch_size=2",
             "-P", "generation.max_new_tokens=8"],
            cwd=root, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(server.bodies) == 2 and server.paths == ["/v1/chat/completions"] * 2
    assert server.headers[0]["authorization"] == "Bearer EMPTY"
