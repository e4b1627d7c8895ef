"""The loop's persistence and resume, and the offline and Optuna proposers (fake twin backend)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from evolve_testkit import fake_evaluate, fake_evaluate_truncating

from crsp_ops.evolve.iteration import Evidence, Proposal
from crsp_ops.evolve.loop import LoopConfig, ProposalFailedError, run_evolution
from crsp_ops.evolve.offline_proposer import OfflineProposer
from crsp_ops.evolve.optuna_proposer import (
    OptunaProposer,
    make_sampler,
    open_study,
    param_name,
    search_ranges,
)
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.evolve.token_usage import ClusterCounter

K = 4
INITIAL = {"0": 0.0, "1": 0.0, "2": 0.0, "3": 0.0}
DESCRIPTIONS = {str(i): {"description": f"c{i}"} for i in range(K)}


def run(tmp_path, proposer, iterations, evaluate=fake_evaluate, stop=False, paired=False):
    store = EvolutionStore(tmp_path, np.arange(K), K)
    return run_evolution(
        pool=list(range(20)), evaluate=evaluate, proposer=proposer, store=store,
        initial_deltas=INITIAL, cluster_descriptions=DESCRIPTIONS,
        config=LoopConfig(iterations=iterations, minibatch_size=4, seed=1, stop_on_failure=stop,
                          paired_best=paired),
    )


def offline():
    return OfflineProposer(ClusterCounter(np.arange(K), K, tokenize=lambda t: []), clamp=5.0,
                           step=0.5)


def test_offline_proposer_improves_not_just_moves(tmp_path):
    outcome = run(tmp_path, offline(), iterations=6)
    first = outcome.history[0].scores["composite_score"]
    assert outcome.best_composite > first
    assert outcome.best_deltas["2"] < 0  # the filler cluster went down ...
    assert outcome.best_deltas["1"] >= 0  # ... the answer cluster was not pushed down
    written = json.loads((tmp_path / "deltas_best.json").read_text())
    assert written == outcome.best_deltas
    assert (tmp_path / "evolution_lengths.png").stat().st_size > 1000
    # one output job per iteration and the final plot, each timed (the fixed-cost benchmark)
    assert len(outcome.output_job_seconds) == 7
    assert all(wall >= 0 and cpu >= 0 for wall, cpu in outcome.output_job_seconds)


@pytest.mark.parametrize("paired", [False, True])
def test_offline_proposer_improves_without_giving_up_correctness(tmp_path, paired):
    """EOS up shortens answers until it cuts them off: the best keeps every answer correct."""
    outcome = run(tmp_path, offline(), iterations=10, evaluate=fake_evaluate_truncating,
                  paired=paired)
    pool = list(range(20))
    initial = fake_evaluate_truncating(pool, INITIAL).scores
    best = fake_evaluate_truncating(pool, outcome.best_deltas).scores
    assert best.composite_score > initial.composite_score + 0.02
    assert best.correctness_ratio == 1.0
    assert best.mean_token_length < initial.mean_token_length - 3
    assert 0.0 < outcome.best_deltas["0"] <= 1.0  # EOS went up, but not past the cut-off


def test_paired_judging_rescores_the_best_on_the_same_minibatch(tmp_path):
    calls = []

    def evaluate(examples, deltas):
        calls.append((list(examples), dict(deltas)))
        return fake_evaluate(examples, deltas)

    rows = run(tmp_path, offline(), iterations=5, evaluate=evaluate, paired=True).history
    assert rows[0].incumbent_scores is None and rows[0].improved  # nothing to beat yet
    assert calls[0][1] == rows[0].deltas
    position, best = 1, rows[0]
    for row in rows[1:]:
        (batch, candidate), (same_batch, incumbent) = calls[position:position + 2]
        position += 2
        assert candidate == row.deltas and incumbent == best.deltas and same_batch == batch
        assert row.improved == (
            row.scores["composite_score"] > row.incumbent_scores["composite_score"])
        assert row.best_composite_score == max(row.scores["composite_score"],
                                               row.incumbent_scores["composite_score"])
        best = row if row.improved else best
    assert position == len(calls)
    assert any(row.improved for row in rows[1:])


class Interrupting(Proposer):
    """Wraps a proposer; raises KeyboardInterrupt in the evaluation of one iteration."""

    name = "offline"

    def __init__(self, inner):
        self.inner = inner

    def propose(self, evidence):
        return self.inner.propose(evidence)

    def state_dict(self):
        return self.inner.state_dict()

    def load_state_dict(self, state):
        self.inner.load_state_dict(state)


def test_interrupt_flushes_best_and_resume_does_not_repeat(tmp_path):
    calls = []

    def evaluate(examples, deltas):
        calls.append(dict(deltas))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return fake_evaluate(examples, deltas)

    with pytest.raises(KeyboardInterrupt):
        run(tmp_path, Interrupting(offline()), iterations=5, evaluate=evaluate)
    assert json.loads((tmp_path / "state.json").read_text())["next_iteration"] == 2
    assert (tmp_path / "processor_best.py").exists()
    interrupted_current = json.loads((tmp_path / "deltas_current.json").read_text())

    calls.clear()
    outcome = run(tmp_path, Interrupting(offline()), iterations=5,
                  evaluate=lambda ex, d: (calls.append(dict(d)), fake_evaluate(ex, d))[1])
    assert len(calls) == 3  # iterations 2, 3, 4 only
    assert calls[0] == interrupted_current
    assert [row.iteration for row in outcome.history] == [0, 1, 2, 3, 4]
    uninterrupted = run(tmp_path / "fresh", offline(), iterations=5)
    assert [r.deltas for r in outcome.history] == [r.deltas for r in uninterrupted.history]


class Failing(Proposer):
    name = "failing"

    def propose(self, evidence):
        return Proposal(deltas=None, error="no luck")


def test_failed_proposals_keep_last_good_deltas_or_stop(tmp_path):
    outcome = run(tmp_path / "continue", Failing(), iterations=3)
    assert [r.deltas for r in outcome.history] == [INITIAL] * 3
    assert all(r.proposal_failed for r in outcome.history)
    with pytest.raises(ProposalFailedError, match="no luck"):
        run(tmp_path / "stop", Failing(), iterations=3, stop=True)
    rows = json.loads((tmp_path / "stop" / "history.json").read_text())
    assert len(rows) == 1 and rows[0]["proposal_failed"]


def test_resume_refuses_another_proposer(tmp_path):
    run(tmp_path, offline(), iterations=1)
    with pytest.raises(ValueError, match="same proposer"):
        run(tmp_path, Failing(), iterations=2)


def optuna_proposer(path, seed=0):
    study = open_study(storage=f"sqlite:///{path / 'optuna.db'}", study_name="s",
                       sampler=make_sampler("tpe", seed, budget=8),
                       first_params={param_name(cid): v for cid, v in INITIAL.items()})
    return OptunaProposer(study, search_ranges(INITIAL, low=-2, high=2, overrides={}))


def test_optuna_enqueues_initial_first_and_resumes_its_study(tmp_path):
    """Ctrl+C fails the pending trial; the resumed run evaluates its params again."""
    with pytest.raises(KeyboardInterrupt):
        calls = []

        def evaluate(examples, deltas):
            calls.append(1)
            if len(calls) == 4:
                raise KeyboardInterrupt
            return fake_evaluate(examples, deltas)

        run(tmp_path, optuna_proposer(tmp_path), iterations=6, evaluate=evaluate)
    outcome = run(tmp_path, optuna_proposer(tmp_path), iterations=6)
    study = optuna_proposer(tmp_path).study
    trials = study.trials
    assert trials[0].params == {f"delta_{i}": 0.0 for i in range(K)}  # the initial deltas
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3 + ["FAIL"] + ["COMPLETE"] * 3
    assert trials[4].params == trials[3].params  # the interrupted trial, evaluated again
    assert trials[4].user_attrs["retry_of"] == 3
    complete = [t for t in trials if t.value is not None]
    assert [t.number for t in complete] == [0, 1, 2, 4, 5, 6]  # none repeated, none skipped
    assert [row.proposer_metrics["optuna_trial"] for row in outcome.history] == [
        0, 1, 2, 4, 5, 6]
    for row, trial in zip(outcome.history, complete, strict=True):
        assert row.deltas == {str(i): trial.params[f"delta_{i}"] for i in range(K)}
        assert row.scores["composite_score"] == pytest.approx(trial.value)


def _evidence(deltas, iteration, final=False):
    result = fake_evaluate(list(range(4)), deltas)
    scores = {name: float(getattr(result.scores, name)) for name in (
        "mean_token_length", "correctness_ratio", "shortness_score", "composite_score")}
    return Evidence(iteration=iteration, deltas=deltas, records=list(result.records),
                    scores=scores, best_composite=scores["composite_score"],
                    cluster_descriptions=DESCRIPTIONS, final=final)


def test_two_optuna_proposers_interleaved_share_one_study_and_budget(tmp_path):
    """The joining worker neither re-enqueues nor tells a fresh trial the initial score."""
    first = {param_name(cid): v for cid, v in INITIAL.items()}
    ranges = search_ranges(INITIAL, low=-2, high=2, overrides={})
    workers = [
        OptunaProposer(open_study(storage=f"sqlite:///{tmp_path / 'optuna.db'}", study_name="s",
                                  sampler=make_sampler("tpe", seed, budget=8), first_params=first),
                       ranges, n_trials=5, trial_attrs={"worker": str(seed)})
        for seed in (0, 1)
    ]
    current = [w.begin(INITIAL) for w in workers]
    assert current[0] == INITIAL and current[1] != INITIAL  # worker 1 got a fresh trial
    told = {0: [], 1: []}
    running = [True, True]
    iteration = 0
    while any(running):
        for index, worker in enumerate(workers):
            if not running[index]:
                continue
            told[index].append((worker.pending, current[index]))
            proposal = worker.propose(_evidence(current[index], iteration))
            current[index], running[index] = proposal.deltas, not proposal.stop
        iteration += 1
    study = workers[0].study
    assert [t.state.name for t in study.trials] == ["COMPLETE"] * 5  # the budget, none RUNNING
    assert sorted(n for pairs in told.values() for n, _ in pairs) == [0, 1, 2, 3, 4]
    for index, pairs in told.items():
        for number, deltas in pairs:
            trial = study.trials[number]
            assert trial.user_attrs["worker"] == str(index)
            assert trial.params == {param_name(c): v for c, v in deltas.items()}
            assert trial.value == _evidence(deltas, 0).scores["composite_score"]
    late = OptunaProposer(open_study(storage=f"sqlite:///{tmp_path / 'optuna.db'}",
                                     study_name="s", sampler=make_sampler("tpe", 2, budget=8)),
                          ranges, n_trials=5)
    assert late.begin(INITIAL) is None  # the budget is spent: nothing to evaluate


def test_optuna_release_fails_the_pending_trial_and_begin_retries_it(tmp_path):
    proposer = optuna_proposer(tmp_path)
    proposer.begin(INITIAL)
    proposer.propose(_evidence(INITIAL, 0))  # trial 0 told; trial 1 asked
    asked = dict(proposer.study.trials[1].params)
    proposer.release()  # Ctrl+C while trial 1 was being evaluated
    assert proposer.study.trials[1].state.name == "FAIL"
    resumed = optuna_proposer(tmp_path)
    resumed.load_state_dict(proposer.state_dict())
    deltas = resumed.begin(INITIAL)
    retry = resumed.study.trials[2]
    assert retry.params == asked and retry.user_attrs["retry_of"] == 1
    assert deltas == {cid: asked[param_name(cid)] for cid in INITIAL}
