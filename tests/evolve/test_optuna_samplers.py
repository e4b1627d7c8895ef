"""The Optuna baselines run as named within a small budget: TPE fits, CMA-ES starts at x0."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from evolve_testkit import fake_evaluate

from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.optuna_proposer import (
    CMAES_SIGMA0,
    SAMPLED_BY,
    OptunaProposer,
    make_sampler,
    open_study,
    param_name,
    search_ranges,
    startup_trials,
)
from crsp_ops.evolve.store import EvolutionStore

K = 6
INITIAL = {str(i): 0.5 for i in range(K)}
DESCRIPTIONS = {str(i): {"description": f"c{i}"} for i in range(K)}
BUDGET = 8


def search(tmp_path, sampler, iterations=BUDGET):
    """An 8-iteration search with ``sampler``; the study and the loop's history."""
    first = {param_name(cid): v for cid, v in INITIAL.items()}
    ranges = search_ranges(INITIAL, low=-3, high=3, overrides={})
    study = open_study(storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name="s",
                       sampler=sampler, first_params=first)
    outcome = run_evolution(
        pool=list(range(20)), evaluate=fake_evaluate,
        proposer=OptunaProposer(study, ranges), initial_deltas=INITIAL,
        store=EvolutionStore(tmp_path, np.arange(K), K), cluster_descriptions=DESCRIPTIONS,
        config=LoopConfig(iterations=iterations, minibatch_size=4, seed=1, stop_on_failure=False,
                          paired_best=False))
    return study, outcome


def sampled(study):
    return [t.user_attrs[SAMPLED_BY] for t in study.trials]


def x0_and_ranges():
    first = {param_name(cid): v for cid, v in INITIAL.items()}
    ranges = {param_name(c): r for c, r in
              search_ranges(INITIAL, low=-3, high=3, overrides={}).items()}
    return first, ranges


def test_tpe_fits_its_model_after_a_quarter_of_the_budget(tmp_path):
    study, outcome = search(tmp_path, make_sampler("tpe", 0, budget=BUDGET))
    # trial 0: the initial deltas; startup_trials(8) = 2 counts it, so one random trial
    assert sampled(study) == ["enqueued", "random"] + ["model"] * 6
    assert [row.proposer_metrics["optuna_model_based"] for row in outcome.history] == [
        0.0, 0.0] + [1.0] * 6


def test_optunas_default_tpe_would_be_random_search_at_this_budget(tmp_path):
    """The baseline as it ran before: TPESampler(seed) never fits in 8 trials."""
    study, _ = search(tmp_path, optuna.samplers.TPESampler(seed=0))
    assert sampled(study) == ["enqueued"] + ["random"] * 7


def test_cmaes_starts_at_the_initial_deltas_with_a_small_step(tmp_path):
    x0, ranges = x0_and_ranges()
    study, _ = search(tmp_path, make_sampler("cmaes", 0, budget=BUDGET, x0=x0, ranges=ranges))
    assert study.trials[0].params == x0
    assert sampled(study) == ["enqueued"] + ["model"] * 7
    steps = np.array([[t.params[k] - x0[k] for k in x0] for t in study.trials[1:]])
    # a 0.5 step around x0: uniform draws over [-3, 3] would stray ~1.7 from 0.5 on average
    assert np.abs(steps).mean() < 2 * CMAES_SIGMA0
    assert np.abs(steps).max() < 8 * CMAES_SIGMA0


def test_random_search_never_claims_a_model(tmp_path):
    study, _ = search(tmp_path, make_sampler("random", 0, budget=BUDGET))
    assert sampled(study) == ["enqueued"] + ["random"] * 7


@pytest.mark.parametrize("kind", ["tpe", "cmaes", "random"])
def test_each_sampler_is_seeded(tmp_path, kind):
    x0, ranges = x0_and_ranges()

    def params(path, seed):
        path.mkdir()
        sampler = make_sampler(kind, seed, budget=BUDGET, x0=x0, ranges=ranges)
        return [t.params for t in search(path, sampler, iterations=4)[0].trials]

    same = params(tmp_path / "a", 3)
    assert params(tmp_path / "b", 3) == same
    assert params(tmp_path / "c", 4) != same


def test_startup_trials_and_bad_arguments():
    assert startup_trials(32) == 8
    with pytest.raises(ValueError, match=">= 1"):
        startup_trials(0)
    with pytest.raises(ValueError, match="x0"):
        make_sampler("cmaes", 0, budget=8)
    with pytest.raises(ValueError, match="tpe, cmaes, random"):
        make_sampler("grid", 0, budget=8)
