"""After an interrupt the best files say what history.json and state.json say, nothing newer."""

from __future__ import annotations

import importlib.util
import json

import numpy as np
import pytest
from evolve_testkit import fake_evaluate

from crsp_ops.evolve.iteration import Proposal
from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.store import EvolutionStore

K = 4
INITIAL = {"0": 0.0, "1": 0.0, "2": 0.0, "3": 0.0}
SHORTER = {"0": 0.0, "1": 0.0, "2": -1.0, "3": 0.0}  # fewer filler tokens: a better composite


class StopsAfterImproving(Proposer):
    """Proposes SHORTER, then is interrupted (Ctrl+C) in the call that follows its adoption."""

    name = "scripted"

    def __init__(self) -> None:
        self.improved_iterations: list[int] = []

    def propose(self, evidence):
        if evidence.iteration == 0:
            return Proposal(deltas=dict(SHORTER))
        self.improved_iterations.append(evidence.iteration if evidence.improved else -1)
        raise KeyboardInterrupt  # e.g. during the reflector call after an improving iteration


def load_processor_deltas(path):
    spec = importlib.util.spec_from_file_location("processor_best", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.DELTAS


def test_best_files_come_from_committed_state_after_an_interrupt(tmp_path):
    store = EvolutionStore(tmp_path, np.arange(K), K)
    proposer = StopsAfterImproving()
    with pytest.raises(KeyboardInterrupt):
        run_evolution(
            pool=list(range(20)), evaluate=fake_evaluate, proposer=proposer, store=store,
            initial_deltas=INITIAL, cluster_descriptions={str(i): {} for i in range(K)},
            config=LoopConfig(iterations=4, minibatch_size=4, seed=1, stop_on_failure=False,
                              paired_best=False),
        )
    assert proposer.improved_iterations == [1]  # iteration 1 found a better best, uncommitted
    state = json.loads((tmp_path / "state.json").read_text())
    history = json.loads((tmp_path / "history.json").read_text())
    best = json.loads((tmp_path / "deltas_best.json").read_text())
    assert state["next_iteration"] == 1 and len(history) == 1
    assert best == state["best"]["deltas"] == INITIAL == history[0]["deltas"]
    assert load_processor_deltas(tmp_path / "processor_best.py") == [0.0] * K


def test_stale_temp_files_are_removed_and_nothing_else(tmp_path):
    store = EvolutionStore(tmp_path, np.arange(K), K)
    store.write_current(INITIAL)
    (tmp_path / "reflector" / "iter_000").mkdir(parents=True)
    stale = [tmp_path / ".deltas_best.json.k3j9x0a1.tmp",
             tmp_path / "reflector" / "iter_000" / ".attempt_1_reply.txt.abcdefgh.tmp"]
    for path in stale:
        path.write_text("half")
    kept = tmp_path / "notes.tmp"  # not one of atomic_io's temporary files
    kept.write_text("mine")
    assert store.remove_stale_temp_files() == sorted(stale)
    assert not any(path.exists() for path in stale)
    assert kept.exists() and (tmp_path / "deltas_current.json").exists()
