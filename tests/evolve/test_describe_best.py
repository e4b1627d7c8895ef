from crsp_ops.evolve.iteration import IterationRecord
from crsp_ops.evolve.loop import EvolutionOutcome


def row(iteration, composite, improved, incumbent=None):
    return IterationRecord(iteration, {"0": 0.0}, {"composite_score": composite}, composite,
                           improved, [], False, None, "", 0.0, 0.0, {},
                           incumbent_scores=None if incumbent is None
                           else {"composite_score": incumbent})


def outcome(history, best_iteration, best_composite):
    return EvolutionOutcome(history=history, initial_deltas={"0": 0.0}, best_deltas={"0": 1.0},
                            best_composite=best_composite, best_iteration=best_iteration,
                            resumed_from=0)


def test_paired_run_names_the_adopted_score_and_the_last_rescore():
    # iteration 2 won with 0.3415; re-scored on iteration 3's (harder) minibatch it got 0.2345
    history = [row(0, 0.209, True), row(1, 0.316, True, 0.25), row(2, 0.3415, True, 0.30),
               row(3, 0.2338, False, 0.2345)]
    line = outcome(history, best_iteration=2, best_composite=0.2345).describe_best()
    assert line == ("best deltas: iteration 2, minibatch composite 0.3415 when adopted, "
                    "0.2345 re-scored on iteration 3's minibatch")


def test_unpaired_run_names_only_the_adopted_score():
    history = [row(0, 0.5, True), row(1, 0.7, True), row(2, 0.6, False)]
    assert outcome(history, best_iteration=1, best_composite=0.7).describe_best() == (
        "best deltas: iteration 1, minibatch composite 0.7000 when adopted")
