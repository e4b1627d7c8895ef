"""The held-out comparison carries the paired gains, and the evolve summary ends with a verdict."""

from __future__ import annotations

import json

import numpy as np
from evolve_testkit import fake_evaluate

from crsp_ops.evaluation.minibatch_grading import ScoreWeights
from crsp_ops.evolve.heldout import describe_heldout, evaluate_heldout
from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.offline_proposer import OfflineProposer
from crsp_ops.evolve.session import JobResult, _finish
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.evolve.token_usage import ClusterCounter
from crsp_ops.tracking import Tracker

WEIGHTS = ScoreWeights(shortness_scale=20.0, shortness_weight=0.4, correctness_weight=0.6)
INITIAL = {"0": 0.0, "1": 0.0, "2": 0.0, "3": 0.0}


def test_shorter_best_gets_a_non_inferior_verdict_and_metrics():
    best = {**INITIAL, "2": -1.0}  # 5 filler tokens fewer on every answer, all still correct
    comparison = evaluate_heldout(fake_evaluate, list(range(30)), initial=INITIAL, best=best,
                                  weights=WEIGHTS)
    gains = comparison.paired
    assert gains is not None and gains.n == 30 and gains.tokens.value < -0.2
    metrics = comparison.metrics()
    assert metrics["heldout_correctness_non_inferior"] == 1.0
    assert metrics["heldout_tokens_gain_ci_high"] < 0 < metrics["heldout_composite_gain_ci_low"]
    assert metrics["heldout_composite_gain"] == gains.composite.value
    saved = json.loads(json.dumps(comparison.to_json()))  # heldout.json
    last = describe_heldout(saved).splitlines()[-1]
    assert last.startswith("held-out (30 questions, paired 95% CI): -")
    assert "correctness +0.00 [+0.00, +0.00]: non-inferior; composite +0." in last


def test_same_deltas_say_no_change_and_old_files_still_describe():
    comparison = evaluate_heldout(fake_evaluate, list(range(6)), initial=INITIAL, best=INITIAL,
                                  weights=WEIGHTS)
    assert describe_heldout(comparison.to_json()).endswith(
        "(no change): +0% tokens, correctness +0.00: non-inferior")
    old = {k: v for k, v in comparison.to_json().items() if k != "paired"}  # before issue 26
    assert len(describe_heldout(old).splitlines()) == 2


class Recording(Tracker):
    """A tracker that keeps what was logged."""

    def __init__(self):
        self.logged = {}

    def log_metrics(self, metrics, step):
        self.logged.update(metrics)


def test_the_job_logs_the_answer_budget_and_its_summary_ends_with_the_verdict(tmp_path):
    store = EvolutionStore(tmp_path, np.arange(4), 4)
    outcome = run_evolution(
        pool=list(range(20)), evaluate=fake_evaluate,
        proposer=OfflineProposer(ClusterCounter(np.arange(4), 4, tokenize=lambda t: []),
                                 clamp=5.0, step=0.5),
        store=store, initial_deltas=INITIAL, cluster_descriptions={},
        config=LoopConfig(iterations=3, minibatch_size=4, seed=0, stop_on_failure=False,
                          paired_best=True))
    heldout = evaluate_heldout(fake_evaluate, list(range(100, 120)), initial=INITIAL,
                               best=outcome.best_deltas, weights=WEIGHTS)
    tracker = Recording()
    _finish(store, tracker, outcome, heldout, "offline", 1.0)
    assert outcome.answers_generated == 4 + 2 * 8
    assert tracker.logged["answers_generated"] == 20.0
    assert "heldout_correctness_non_inferior" in tracker.logged
    saved = json.loads((tmp_path / "metrics.json").read_text())
    assert saved["answers_generated"] == 20.0
    last = JobResult(outcome, heldout).describe(tmp_path).splitlines()[-1]
    assert last.startswith("held-out (20 questions")  # the verdict (here: no change)
