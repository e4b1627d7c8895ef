"""Issue 26's search logic on hand-made score tables: the lost-answers guard, the excess-token
length contrast, and the equal answer budget of the offline and Optuna proposers."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from evolve_testkit import FakeRecord, fake_evaluate, fake_evaluate_truncating

from crsp_ops.config import load_settings
from crsp_ops.evolve.acceptance import adopt_candidate, lost_correct, shorter_and_as_correct
from crsp_ops.evolve.iteration import Evidence, Proposal
from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.offline_proposer import OfflineProposer, usage_direction
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.proposer_factory import build_proposer
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.evolve.token_usage import ClusterCounter

REPO = Path(__file__).resolve().parents[2]
K = 4
INITIAL = {str(i): 0.0 for i in range(K)}
DESCRIPTIONS = {str(i): {"description": f"c{i}"} for i in range(K)}


def records(correct):
    return [SimpleNamespace(example_id=str(i), is_correct=c) for i, c in enumerate(correct)]


def test_lost_correct_counts_only_answers_the_incumbent_had_right():
    incumbent = records([True, True, False, False])
    assert lost_correct(records([True, False, True, True]), incumbent) == 1  # +2 -1: net +1
    assert lost_correct(records([False, False, True, True]), incumbent) == 2
    assert lost_correct(list(reversed(records([True] * 4))), incumbent) == 0  # by example_id
    with pytest.raises(ValueError, match="same minibatch"):
        lost_correct(records([True] * 5), incumbent)


def test_adopt_needs_a_higher_composite_and_respects_the_guard():
    assert not adopt_candidate(0.3, 0.3)  # a tie is no improvement
    assert adopt_candidate(0.31, 0.3, lost=3)  # guard off (-1): the composite decides
    assert adopt_candidate(0.31, 0.3, lost=0, max_lost_correct=0)
    assert not adopt_candidate(0.31, 0.3, lost=1, max_lost_correct=0)
    assert adopt_candidate(0.31, 0.3, lost=None, max_lost_correct=0)  # unpaired: no records


def with_example_0(result, correct):
    """``result`` with example 0 graded ``correct`` (the others right), rescored."""
    rows = [FakeRecord(**{**r.__dict__, "is_correct": r.example_id != "0" or correct})
            for r in result.records]
    accuracy = float(np.mean([r.is_correct for r in rows]))
    scores = result.scores
    composite = 0.4 * scores.shortness_score + 0.6 * accuracy
    return type(result)(tuple(rows), type(scores)(scores.mean_token_length, accuracy,
                                                  scores.shortness_score, composite))


def guarded_evaluate(examples, deltas):
    """Cluster 2 down shortens every answer; below -0.5 it also turns example 0 wrong."""
    return with_example_0(fake_evaluate(examples, deltas), deltas["2"] >= -0.5)


def run(tmp_path, proposer, *, iterations=6, evaluate=fake_evaluate, max_lost=-1, mb=4,
        pool=20, acceptance="composite"):
    return run_evolution(
        pool=list(range(pool)), evaluate=evaluate, proposer=proposer,
        store=EvolutionStore(tmp_path, np.arange(K), K), initial_deltas=INITIAL,
        cluster_descriptions=DESCRIPTIONS,
        config=LoopConfig(iterations=iterations, minibatch_size=mb, seed=1,
                          stop_on_failure=False, paired_best=True, max_lost_correct=max_lost,
                          acceptance=acceptance))


def offline(step=1.0, contrast="share"):
    return OfflineProposer(ClusterCounter(np.arange(K), K, tokenize=lambda t: []), clamp=5.0,
                           step=step, length_contrast=contrast)


def test_the_guard_keeps_a_shorter_best_that_loses_a_correct_answer_out(tmp_path):
    """Unguarded, far shorter answers outweigh example 0 turning wrong (1 of 20)."""
    free = run(tmp_path / "free", offline(), evaluate=guarded_evaluate, mb=20)
    guarded = run(tmp_path / "guarded", offline(), evaluate=guarded_evaluate, mb=20,
                  max_lost=0)
    assert free.best_deltas["2"] < -0.5  # adopted although example 0 became wrong
    assert -0.5 <= guarded.best_deltas["2"] < 0  # shorter, and every answer still right
    lost = [row.loop_metrics.get("lost_correct") for row in guarded.history]
    assert lost[0] is None and any(value == 1.0 for value in lost[1:])
    assert all(not row.improved for row in guarded.history
               if row.loop_metrics.get("lost_correct", 0) > 0)


def test_the_guard_still_finds_the_eos_cut_that_keeps_answers_right(tmp_path):
    outcome = run(tmp_path, offline(step=0.5), iterations=10, evaluate=fake_evaluate_truncating,
                  max_lost=0)
    assert 0.0 < outcome.best_deltas["0"] <= 1.0 and outcome.best_deltas["2"] < 0


def evidence_of(counts, lengths, correct):
    rows = [FakeRecord(str(i), "q", "1", "a", n, c, "", tuple(np.repeat(np.arange(K), row)))
            for i, (row, n, c) in enumerate(zip(counts, lengths, correct, strict=True))]
    return Evidence(iteration=0, deltas=INITIAL, records=rows, scores={"composite_score": 0.5},
                    best_composite=0.5, cluster_descriptions=DESCRIPTIONS)


def test_excess_contrast_moves_only_the_clusters_that_carry_the_extra_length():
    """Cluster 3 (the answer) is the same in every answer; 2 is heavy padding, 1 light."""
    counts = np.array([[0, 1, 0, 4], [0, 1, 0, 4], [0, 2, 12, 4], [0, 2, 12, 4]])
    lengths = counts.sum(axis=1).tolist()
    counter = ClusterCounter(np.arange(K), K, tokenize=lambda t: [])
    evidence = evidence_of(counts, lengths, [True] * 4)
    share = usage_direction(evidence, counter, correct_weight=1.0)
    excess = usage_direction(evidence, counter, correct_weight=1.0, length_contrast="excess")
    assert share[3] > 0.5  # diluted by padding, so pushed up as hard as padding goes down
    assert excess[3] == 0.0 and excess[2] == -1.0  # the padding moves by the full step ...
    assert excess[1] == pytest.approx(-1 / 12)  # ... the light one by its part of the gap
    with pytest.raises(ValueError, match="length_contrast"):
        usage_direction(evidence, counter, correct_weight=1.0, length_contrast="ratio")


def test_eos_goes_down_when_long_answers_are_more_correct_unless_only_shorter_can_win():
    """Long answers right, short ones wrong: the composite rule may lengthen, shorter may not."""
    counts = np.array([[0, 4, 0, 0], [0, 4, 0, 0], [0, 4, 8, 0], [0, 4, 8, 0]])
    evidence = evidence_of(counts, counts.sum(axis=1).tolist(), [False, False, True, True])
    counter = ClusterCounter(np.arange(K), K, tokenize=lambda t: [])
    composite = usage_direction(evidence, counter, correct_weight=1.0)
    shorter = usage_direction(evidence, counter, correct_weight=1.0, eos_up_only=True)
    assert composite[0] == -1.0 and shorter[0] == 1.0
    assert np.array_equal(composite[1:], shorter[1:])  # only EOS depends on the rule


def test_the_factory_passes_the_eos_rule_and_the_step_cap():
    clusters = {"token_clusters": np.arange(K), "n_clusters": K, "tokenize": lambda t: []}
    for flag, cap, expected in (("y", "2", (True, 2.0)), ("n", "0", (False, None))):
        settings = load_settings(REPO, [f"evolve.offline_eos_up_only={flag}",
                                        f"evolve.offline_max_step={cap}"]).settings
        proposer = build_proposer("offline", settings, initial_deltas=INITIAL, out_dir=None,
                                  **clusters)
        assert (proposer.eos_up_only, proposer.max_step) == expected


def test_offline_and_optuna_spend_the_same_answers_under_the_default_settings(tmp_path):
    settings = load_settings(REPO, []).settings
    evolve = settings.evolve
    spent = {}
    for kind in ("offline", "optuna"):
        proposer = build_proposer(kind, settings, token_clusters=np.arange(K), n_clusters=K,
                                  initial_deltas=INITIAL, out_dir=tmp_path / kind,
                                  tokenize=lambda t: [])
        config = LoopConfig(iterations=evolve.iterations, minibatch_size=evolve.minibatch_size,
                            seed=evolve.seed, stop_on_failure=False,
                            paired_best=evolve.paired_best,
                            max_lost_correct=evolve.max_lost_correct)
        outcome = run_evolution(
            pool=list(range(200)), evaluate=fake_evaluate, proposer=proposer,
            store=EvolutionStore(tmp_path / kind, np.arange(K), K), initial_deltas=INITIAL,
            cluster_descriptions=DESCRIPTIONS, config=config)
        spent[kind] = outcome.answers_generated
        assert outcome.history[-1].loop_metrics["rollouts_cumulative"] == spent[kind]
    assert spent["offline"] == spent["optuna"] == config.answer_budget()


def lucky_evaluate(examples, deltas):
    """fake_evaluate, except that raising cluster 2 (longer answers) also turns example 0
    right on the minibatch it is in (1 answer of 4: worth more composite than the length)."""
    return with_example_0(fake_evaluate(examples, deltas), deltas["2"] > 0)


class Scripted(Proposer):
    """Proposes the given deltas in turn (the last one again when they run out)."""

    name = "scripted"

    def __init__(self, *deltas):
        self.deltas = list(deltas)

    def propose(self, evidence):
        return Proposal(deltas=dict(self.deltas[min(evidence.iteration, len(self.deltas) - 1)]))


LONGER = {**INITIAL, "2": 1.0}
SHORTER = {**INITIAL, "2": -1.0}


def test_shorter_rule_adopts_only_shorter_answers_that_keep_every_correct_one(tmp_path):
    """Every minibatch holds example 0 (pool of 4), so LONGER wins on the composite there."""
    composite = run(tmp_path / "composite", Scripted(LONGER, SHORTER), iterations=3, pool=4,
                    evaluate=lucky_evaluate)
    shorter = run(tmp_path / "shorter", Scripted(LONGER, SHORTER), iterations=3, pool=4,
                  evaluate=lucky_evaluate, acceptance="shorter")
    assert [row.improved for row in composite.history] == [True, True, False]
    assert composite.best_deltas == LONGER  # longer, one lucky answer: kept over SHORTER
    assert [row.improved for row in shorter.history] == [True, False, True]
    assert shorter.best_deltas == SHORTER
    # guarded_evaluate: cluster 2 below -0.5 turns example 0 wrong, so SHORTER loses it
    lossy = run(tmp_path / "lossy", Scripted(SHORTER), iterations=2, pool=4,
                evaluate=guarded_evaluate, acceptance="shorter")
    safe = run(tmp_path / "safe", Scripted({**INITIAL, "2": -0.4}), iterations=2, pool=4,
               evaluate=guarded_evaluate, acceptance="shorter")
    assert lossy.best_deltas == INITIAL and safe.best_deltas["2"] == -0.4
    with pytest.raises(ValueError, match="acceptance"):
        LoopConfig(iterations=1, minibatch_size=1, seed=0, stop_on_failure=False,
                   paired_best=True, acceptance="fastest")


def test_shorter_and_as_correct_needs_the_same_questions():
    rows = [FakeRecord(str(i), "q", "1", "a", 10, True, "", ()) for i in range(3)]
    assert not shorter_and_as_correct(rows, rows)  # as long: no improvement
    with pytest.raises(ValueError, match="same minibatch"):
        shorter_and_as_correct(rows, rows[:2])


def test_the_step_doubles_after_each_adoption_but_not_past_max_step():
    counts = np.array([[0, 4, 0, 0], [0, 4, 0, 0], [0, 4, 8, 0], [0, 4, 8, 0]])
    records = evidence_of(counts, counts.sum(axis=1).tolist(), [True] * 4).records

    def steps(max_step):
        proposer = OfflineProposer(ClusterCounter(np.arange(K), K, tokenize=lambda t: []),
                                   clamp=None, step=1.0, max_step=max_step)
        deltas, taken = INITIAL, []
        for iteration in range(5):  # every proposal adopted
            evidence = Evidence(iteration=iteration, deltas=deltas, records=records,
                                scores={"composite_score": 0.5 + iteration},
                                best_composite=0.5 + iteration,
                                cluster_descriptions=DESCRIPTIONS, improved=iteration > 0)
            proposal = proposer.propose(evidence)
            taken.append(max(abs(proposal.deltas[k] - deltas[k]) for k in deltas))
            deltas = proposal.deltas
        return taken

    assert steps(None) == [1.0, 2.0, 4.0, 8.0, 16.0]
    assert steps(2.0) == [1.0, 2.0, 2.0, 2.0, 2.0]
