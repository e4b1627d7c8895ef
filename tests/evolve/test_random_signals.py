"""Seeded random SIGINT/SIGTERM deliveries over real `crsp-ops evolve` processes.

An undisturbed run is timed first; then each delivery starts `crsp-ops evolve` (resuming the
interrupted output directory, or a fresh one once a run finished), sends SIGINT or SIGTERM
after a random delay within that time (startup, generation, reflector calls, the registry's
``log_model``, teardown) and checks, once the process is gone: no MLflow run is RUNNING, and
``deltas_best.json``/``processor_best.py`` hold exactly the best deltas of ``state.json`` (the
last commit). The reflector is a loopback server proposing random valid deltas, slowly, so
deliveries also land in the reflector call that follows an improving iteration.
"""

from __future__ import annotations

import collections
import importlib.util
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from evolve_testkit import make_project
from mlflow.tracking import MlflowClient

from tests.fakes import ScriptedJSONServer, chat_completion

SEED = 19
DELIVERIES = 20
CLI = [sys.executable, "-m", "crsp_ops.cli", "evolve"]


def reflector_script(n_clusters: int):
    def reply(body, count):
        rng = random.Random(f"{SEED}:{count}")
        deltas = {str(i): round(rng.uniform(-1.5, 1.0), 3) for i in range(n_clusters)}
        content = json.dumps({"deltas": deltas, "summary": f"try {count}"})
        return 200, chat_completion(content, body["model"]), 0.3
    return reply


def processor_deltas(path: Path) -> list[float]:
    spec = importlib.util.spec_from_file_location(f"processor_{time.monotonic_ns()}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.DELTAS)


def check_outputs(out: Path, initial: dict) -> str:
    """``""`` when the best files equal the committed best, else what differs."""
    state_path, best_path = out / "state.json", out / "deltas_best.json"
    if not best_path.exists():
        return ""
    best = json.loads(best_path.read_text())
    committed = json.loads(state_path.read_text())["best"]["deltas"] \
        if state_path.exists() else initial
    if best != committed:
        return f"{out.name}: deltas_best {best} != committed {committed}"
    if processor_deltas(out / "processor_best.py") != [best[str(i)] for i in range(len(best))]:
        return f"{out.name}: processor_best.py disagrees with deltas_best.json"
    return ""


def runs(db: Path, status: str | None = None) -> list[str]:
    if not db.exists():
        return []
    client = MlflowClient(f"sqlite:///{db}")
    ids = [e.experiment_id for e in client.search_experiments()]
    query = f"attributes.status = '{status}'" if status else ""
    return [r.info.run_id for r in client.search_runs(ids, filter_string=query)] if ids else []


@pytest.mark.slow
@pytest.mark.server
def test_random_signals_never_leave_a_run_running_nor_best_files_uncommitted(
        tmp_path, evolve_inputs):
    root = make_project(tmp_path / "proj", evolve_inputs)
    initial = json.loads(evolve_inputs.deltas_file.read_text())
    env = {**os.environ, "CRSP_OPS_ROOT": str(root), "REFLECTOR_TEST_KEY": "local-key-123"}
    for variable in ("MLFLOW_RUN_ID", "MLFLOW_TRACKING_URI"):
        env.pop(variable, None)
    rng = random.Random(SEED)
    stats = collections.Counter()
    problems: list[str] = []
    started_all = time.monotonic()
    with ScriptedJSONServer(reflector_script(evolve_inputs.n_clusters)) as server:
        settings = [
            "evolve.iterations=3", "evolve.minibatch_size=2", "evolve.heldout_size=1",
            "generation.max_new_tokens=16", "evolve.proposer=reflector",
            f"reflector.base_url={server.base_url}", "reflector.api_key_env=REFLECTOR_TEST_KEY",
            "reflector.max_attempts=1",
        ]
        args = [a for item in settings for a in ("--set", item)]

        def launch(out: str, resume: bool) -> subprocess.Popen:
            where = ["--resume", out] if resume else ["--out", out]
            return subprocess.Popen([*CLI, *args, *where], cwd=root, env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)

        began = time.monotonic()
        baseline = launch("outputs/undisturbed", resume=False)
        _, err = baseline.communicate(timeout=500)
        assert baseline.returncode == 0, err[-3000:]
        full_s = time.monotonic() - began

        run_index, delivered, attempts = 0, 0, 0
        typical_s = full_s  # the latest untouched launch's duration (the CPU load varies)
        while delivered < DELIVERIES and attempts < 4 * DELIVERIES:
            attempts += 1
            out = f"outputs/run_{run_index}"
            resume = (root / out / "state.json").exists()
            runs_before = len(runs(root / "mlflow.db"))
            proc = launch(out, resume)
            delay = rng.uniform(0.0, typical_s)
            signum = rng.choice([signal.SIGINT, signal.SIGTERM])
            began = time.monotonic()
            try:
                proc.wait(timeout=delay)
                typical_s = time.monotonic() - began
            except subprocess.TimeoutExpired:
                proc.send_signal(signum)
                delivered += 1
                stats[f"sent {signal.Signals(signum).name}"] += 1
            _, err = proc.communicate(timeout=300)
            stats[f"rc {proc.returncode}"] += 1
            stats["resumed" if resume else "fresh"] += 1
            opened_a_run = len(runs(root / "mlflow.db")) > runs_before
            if proc.returncode == 0:
                run_index += 1  # finished (or signalled only in teardown): next one is fresh
                stats["finished runs"] += 1
            elif proc.returncode != 130 and opened_a_run:
                problems.append(f"rc {proc.returncode} after the run started: {err[-1500:]}")
            elif proc.returncode != 130:  # killed while importing, before any run existed
                stats["signalled during startup"] += 1
            if "Traceback" in err and not any(
                    kind in err for kind in ("KeyboardInterrupt", "Terminated")):
                problems.append(f"crash: {err[-1500:]}")
            stuck = runs(root / "mlflow.db", "RUNNING")
            if stuck:
                problems.append(f"delivery {delivered}: RUNNING runs {stuck}; {err[-1500:]}")
            mismatch = check_outputs(root / out, initial)
            if mismatch:
                problems.append(f"delivery {delivered}: {mismatch}")
    stats["RUNNING runs"] = len(runs(root / "mlflow.db", "RUNNING"))
    print("\n" + json.dumps({"deliveries": delivered, "launches": attempts,
                             "undisturbed_run_s": round(full_s, 1),
                             "test_s": round(time.monotonic() - started_all, 1), **stats}))
    assert problems == []
    assert delivered >= DELIVERIES
    assert stats["RUNNING runs"] == 0
