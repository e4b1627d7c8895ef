"""The held-out comparison carries the paired gains, and the evolve summary ends with a verdict."""

from __future__ import annotations

import json

from evolve_testkit import fake_evaluate

from crsp_ops.evaluation.minibatch_grading import ScoreWeights
from crsp_ops.evolve.heldout import describe_heldout, evaluate_heldout

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
    assert describe_heldout(comparison.to_json()).endswith("(no change)")
    old = {k: v for k, v in comparison.to_json().items() if k != "paired"}  # before issue 26
    assert len(describe_heldout(old).splitlines()) == 2
