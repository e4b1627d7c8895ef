"""benchmarks/evolve_heldout.py end to end on the fake twin: arms, equal budget, tables, JSON."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from evolve_testkit import fake_evaluate

from benchmarks.evolve_heldout import run_arms
from benchmarks.evolve_heldout_report import report
from crsp_ops.config import load_settings
from crsp_ops.evaluation.minibatch_grading import grading_from_settings
from crsp_ops.evolve.loop import LoopConfig

REPO = Path(__file__).resolve().parents[2]
K = 4
INITIAL = {str(i): 0.0 for i in range(K)}


def test_every_arm_and_seed_gets_a_row_a_table_and_the_same_budget(tmp_path, capsys):
    settings = load_settings(REPO, ["evolve.iterations=3", "evolve.minibatch_size=4"]).settings
    config = LoopConfig(iterations=3, minibatch_size=4, seed=0, stop_on_failure=False,
                        paired_best=True)
    config = LoopConfig(**{**config.__dict__, "max_rollouts": config.answer_budget()})
    clusters = SimpleNamespace(token_clusters=np.arange(K), n_clusters=K,
                               descriptions={str(i): {"description": f"c{i}"} for i in range(K)})
    arms, seeds = ["offline", "optuna", "offline+frontier"], [0, 1]
    started = time.perf_counter()
    initial_cols, rows, answers = run_arms(
        arms=arms, seeds=seeds, evaluate=fake_evaluate, pool=list(range(40)),
        heldout=list(range(100, 130)), initial=INITIAL, clusters=clusters, settings=settings,
        config=config, workdir=tmp_path, tokenize=lambda text: [])
    assert len(initial_cols[0]) == 30 and len(rows) == 6 and set(answers) == {
        (arm, seed) for arm in arms for seed in seeds}
    for row in rows:  # the frontier's parents count against the same budget
        assert row["answers_generated"] <= config.answer_budget() + 4
    plain = {r["answers_generated"] for r in rows if r["arm"] != "offline+frontier"}
    assert plain == {config.answer_budget()}  # 4 + 2 * 8: offline and Optuna alike
    summary = report(arms=arms, seeds=seeds, heldout_sha256="abc", initial_cols=initial_cols,
                     rows=rows, answers=answers,
                     weights=grading_from_settings(settings.scoring).weights, config=config,
                     extra={"model": "fake"}, started=started)
    json.dumps(summary)
    assert summary["heldout_questions"] == 30 and summary["answer_budget"] == 20
    assert set(summary["composite_first_minus_other_seed_average"]) == {
        "offline - optuna", "offline - offline+frontier"}
    err = capsys.readouterr().err
    assert all(f"### {arm}" in err for arm in arms) and "wall time:" in err
    assert err.count("| mean |") == 4 and "### initial" in err


def test_sampler_arms_run_as_named_and_record_their_model_based_trials(tmp_path):
    """tpe and cmaes fit within 8 trials (most trials model-based); random never does."""
    settings = load_settings(REPO, ["evolve.iterations=8", "evolve.minibatch_size=4"]).settings
    config = LoopConfig(iterations=8, minibatch_size=4, seed=0, stop_on_failure=False,
                        paired_best=False)
    clusters = SimpleNamespace(token_clusters=np.arange(K), n_clusters=K,
                               descriptions={str(i): {"description": f"c{i}"} for i in range(K)})
    _, rows, _ = run_arms(
        arms=["offline", "tpe", "cmaes", "random"], seeds=[5], evaluate=fake_evaluate,
        pool=list(range(40)), heldout=list(range(100, 110)), initial=INITIAL,
        clusters=clusters, settings=settings,
        config=LoopConfig(**{**config.__dict__, "max_rollouts": config.answer_budget()}),
        workdir=tmp_path, tokenize=lambda text: [])
    by_arm = {r["arm"]: r for r in rows}
    assert {a: r["sampler"] for a, r in by_arm.items()} == {
        "offline": None, "tpe": "tpe", "cmaes": "cmaes", "random": "random"}
    assert by_arm["tpe"]["model_based_trials"] == 6  # 8 - the initial deltas - ceil(8/4) + 1
    assert by_arm["cmaes"]["model_based_trials"] == 7  # every trial after x0
    assert by_arm["random"]["model_based_trials"] == 0 == by_arm["offline"]["model_based_trials"]
