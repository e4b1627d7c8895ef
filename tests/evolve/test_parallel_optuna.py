"""Two real `crsp-ops optuna` workers finish one shared trial budget on one study.

The study lives in PostgreSQL (a fresh database; skipped without the server) or in a journal
file (one machine, no database). Both workers start together on the tiny model, each with its
own output directory and worker index, and both log to the project's MLflow store. Read back
from the study, the workers' ``history.json`` and MLflow: exactly the budget of trials is
COMPLETE and none is left RUNNING or WAITING, each COMPLETE trial was told by exactly one
worker the composite that worker measured for exactly that trial's params, the initial deltas
were enqueued once, and the two MLflow runs are told apart by name, tag and trial attrs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import optuna
import pytest
from evolve_testkit import REPO, make_project
from mlflow.tracking import MlflowClient

from crsp_ops.evolve.optuna_proposer import (
    OVER_BUDGET,
    param_name,
    resolve_storage,
)
from crsp_ops.tracking.store_init import open_client

BUDGET = 10
WORKERS = 2
# Iterations long enough (8 questions, paired judging generates twice) that one worker alone
# needs longer for the budget than the other's start-up skew: both take part.
SMALL = [f"evolve.iterations={BUDGET}", "evolve.minibatch_size=8", "evolve.heldout_size=2",
         "evolve.registry_enabled=false", "generation.max_new_tokens=32",
         f"optuna.n_trials={BUDGET}", "tracking.flush_seconds=0.0"]


def _launch(root, storage: str, worker: int, log) -> subprocess.Popen:
    args = [sys.executable, "-m", "crsp_ops.cli", "optuna", "--out", f"outputs/worker{worker}"]
    for item in [*SMALL, f"optuna.storage={storage}", f"optuna.worker={worker}"]:
        args += ["--set", item]
    env = {**os.environ, "CRSP_OPS_ROOT": str(root), "OMP_NUM_THREADS": "1",
           "MLFLOW_DISABLE_TELEMETRY": "true"}
    for key in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_NAME"):
        env.pop(key, None)
    return subprocess.Popen(args, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)


def _run_workers(root, storage: str) -> None:
    logs = [(root / f"worker{w}.log").open("w") for w in range(WORKERS)]
    procs = [_launch(root, storage, w, logs[w]) for w in range(WORKERS)]
    deadline = time.monotonic() + 600
    try:
        for proc in procs:
            proc.wait(timeout=max(deadline - time.monotonic(), 1))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
        for log in logs:
            log.close()
    for w, proc in enumerate(procs):
        text = (root / f"worker{w}.log").read_text()
        assert proc.returncode == 0, f"worker {w} exited {proc.returncode}:\n{text[-4000:]}"


@pytest.fixture(params=["journal", pytest.param("postgresql", marks=pytest.mark.server)])
def storage(request, tmp_path):
    """The study's storage: a journal file, or a fresh PostgreSQL database."""
    if request.param == "journal":
        return f"journal:{tmp_path / 'optuna.journal'}"
    return request.getfixturevalue("postgres_url")


@pytest.mark.slow  # ~2 min: two evolve jobs at once on the tiny model
def test_two_workers_share_one_budget_without_losing_or_repeating_a_trial(
        tmp_path, evolve_inputs, storage):
    root = make_project(tmp_path / "proj", evolve_inputs)
    # the store exists, as after any earlier run (its concurrent creation: test_store_init.py)
    open_client(f"sqlite:///{root / 'mlflow.db'}")
    _run_workers(root, storage)

    study = optuna.load_study(study_name="crsp-evolve",
                              storage=resolve_storage(storage, root / "unused"))
    trials = study.trials
    complete = [t for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(complete) == BUDGET
    others = [t for t in trials if t.state != optuna.trial.TrialState.COMPLETE]
    # only trials that lost a race for the last slot, told FAIL at once; none RUNNING
    assert all(t.state == optuna.trial.TrialState.FAIL and t.user_attrs.get(OVER_BUDGET)
               for t in others), [(t.number, t.state.name, t.user_attrs) for t in others]
    assert [t.number for t in trials] == list(range(len(trials)))

    initial = json.loads((root / "outputs/deltas/deltas_initial.json").read_text())
    initial_params = {param_name(cid): value for cid, value in initial.items()}
    assert sum(t.params == initial_params for t in trials) == 1  # enqueued once per study

    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    told: dict[int, int] = {}  # trial number -> worker that told it
    run_ids = set()
    for worker in range(WORKERS):
        out = root / "outputs" / f"worker{worker}"
        history = json.loads((out / "history.json").read_text())
        run_id = json.loads((out / "mlflow_run.json").read_text())["run_id"]
        run = client.get_run(run_id)
        assert run.info.status == "FINISHED"
        assert run.info.run_name.startswith("evolve-optuna-tpe-"), run.info.run_name
        assert run.info.run_name.endswith(f"-w{worker}"), run.info.run_name
        assert run.data.tags["optuna.worker"] == str(worker)
        run_ids.add(run_id)
        logged = {m.step: m.value for m in client.get_metric_history(run_id, "composite_score")}
        assert logged == {row["iteration"]: row["scores"]["composite_score"] for row in history}
        for row in history:
            number = int(row["proposer_metrics"]["optuna_trial"])
            assert number not in told, f"trial {number} told by workers {told[number]}, {worker}"
            told[number] = worker
            trial = trials[number]
            # the told value is the score this worker measured for exactly this trial's params
            assert trial.params == {param_name(cid): v for cid, v in row["deltas"].items()}
            assert trial.value == row["scores"]["composite_score"]
            assert trial.user_attrs["worker"] == str(worker)
            assert trial.user_attrs["mlflow_run_id"] == run_id
    assert sorted(told) == sorted(t.number for t in complete)  # none lost, none told twice
    assert set(told.values()) == set(range(WORKERS))  # both workers took part
    assert len(run_ids) == WORKERS
