"""No key reaches a file, MLflow or the console, even from a server that echoes it on 401.

Canary secrets are planted where users put keys: the variable named by
``reflector.api_key_env`` (under a name that does not look secret, so only the key the client
was built with identifies it) and the password of ``reflector.base_url``. The reflector
server echoes every credential it receives in its 401 error, as some proxies do. Afterwards
every byte written (output files, MLflow artifacts, the MLflow database, the console) is
searched for them.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from evolve_testkit import fake_evaluate, make_project
from mlflow.tracking import MlflowClient

from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.reflector import ReflectorProposer, make_openai_client
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.tracking import MlflowTracker
from tests.fakes import ScriptedJSONServer

ENV_CANARY = "canary7f3e9b2c1d5a"
URL_CANARY = "urlpass8c4d2e1f6b"
K = 4


class EchoingServer(ScriptedJSONServer):
    """Answers 401 and repeats the credential it was sent (bearer or basic, decoded)."""

    def __init__(self) -> None:
        self.echoed: list[str] = []
        super().__init__(self._reply)

    def _reply(self, body, count):
        header = self.headers[count - 1].get("authorization", "")
        scheme, _, credential = header.partition(" ")
        if scheme == "Basic":
            credential = base64.b64decode(credential).decode()
        message = f"Incorrect API key provided: {credential}. You sent Authorization: {header}"
        self.echoed.append(message)
        return 401, {"error": {"message": message, "type": "invalid_request_error",
                               "code": "invalid_api_key"}}, 0.0


def files_holding(root: Path, needles: list[bytes]) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {needle!r}" for needle in needles if needle in data]
    return found


@pytest.mark.server
def test_echoed_key_reaches_no_file_and_no_mlflow_artifact(tmp_path, monkeypatch):
    monkeypatch.setenv("LLM_ACCESS", ENV_CANARY)  # a name that does not say "secret"
    client = MlflowClient(f"sqlite:///{tmp_path / 'mlflow.db'}")
    experiment = client.create_experiment("e", artifact_location=(tmp_path / "mlruns").as_uri())
    run_id = client.create_run(experiment).info.run_id
    tracker = MlflowTracker(client, run_id, experiment, flush_points=1000, flush_seconds=60)
    with EchoingServer() as server:
        proposer = ReflectorProposer(
            make_openai_client(base_url=server.base_url, api_key_env="LLM_ACCESS",
                               timeout_s=10.0),
            model="m", n_clusters=K, clamp=5.0, max_attempts=2, retry_backoff_s=0.0,
            temperature=0.0, max_tokens=10, k_longest=0, max_response_chars=0,
        )
        outcome = run_evolution(
            pool=list(range(10)), evaluate=fake_evaluate, proposer=proposer,
            store=EvolutionStore(tmp_path / "out", np.arange(K), K),
            initial_deltas={str(i): 0.0 for i in range(K)},
            cluster_descriptions={str(i): {} for i in range(K)},
            config=LoopConfig(iterations=3, minibatch_size=2, seed=0, stop_on_failure=False,
                              paired_best=False),
            tracker=tracker,
        )
    tracker.flush()
    client.set_terminated(run_id, "FINISHED")
    assert len(server.echoed) == 6 and all(ENV_CANARY in m for m in server.echoed)
    assert all(row.proposal_failed and "401" in row.proposal_error for row in outcome.history)
    assert "***" in outcome.history[0].proposal_error
    exchange_files = list((tmp_path / "out" / "reflector").rglob("*exchange.json"))
    artifacts = list((tmp_path / "mlruns").rglob("*exchange.json"))
    assert len(exchange_files) == len(artifacts) == 6
    assert files_holding(tmp_path, [ENV_CANARY.encode()]) == []
    print(f"\n401 echoes: {len(server.echoed)}, files scanned: "
          f"{sum(1 for p in tmp_path.rglob('*') if p.is_file())}, leaks: 0")


@pytest.mark.server
def test_key_in_base_url_and_echoed_key_leave_no_trace_in_a_real_evolve_run(
        tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    pool = root / "data" / "financebench" / "pool.jsonl"
    pool.write_bytes(pool.read_bytes() + b'{"question": "\xff broken"}\n')  # one bad row
    with EchoingServer() as server:
        url = server.base_url.replace("http://", f"http://user:{URL_CANARY}@")
        settings = [
            "evolve.iterations=2", "evolve.minibatch_size=2", "evolve.heldout_size=1",
            "evolve.registry_enabled=n", "generation.max_new_tokens=16",
            "evolve.proposer=reflector", f"reflector.base_url={url}",
            "reflector.api_key_env=LLM_ACCESS", "reflector.max_attempts=1",
        ]
        env = {**os.environ, "CRSP_OPS_ROOT": str(root), "LLM_ACCESS": ENV_CANARY}
        for variable in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI"):
            env.pop(variable, None)
        done = subprocess.run(
            [sys.executable, "-m", "crsp_ops.cli", "evolve",
             *[a for item in settings for a in ("--set", item)]],
            cwd=root, env=env, capture_output=True, text=True, timeout=500,
        )
    console = done.stdout + done.stderr
    assert done.returncode == 0, console[-3000:]
    assert len(server.echoed) == 2 and all(URL_CANARY in m for m in server.echoed)
    basic = base64.b64encode(f"user:{URL_CANARY}".encode()).decode()
    needles = [URL_CANARY.encode(), ENV_CANARY.encode(), basic.encode()]
    assert [n for n in needles if n.decode() in console] == []
    assert files_holding(root, needles) == []
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    run_id = json.loads((root / "outputs" / "evolution" / "mlflow_run.json").read_text())["run_id"]
    run = client.get_run(run_id)
    assert run.data.params["reflector.base_url"].startswith("http://***@127.0.0.1:")
    assert run.data.metrics["data_pool_skipped_rows"] == 1.0
    assert "pool.jsonl: 1 of" in console  # the skipped row is also a warning
    print(f"\nrequests echoed: {len(server.echoed)}, files scanned: "
          f"{sum(1 for p in root.rglob('*') if p.is_file())}, leaks: 0")
