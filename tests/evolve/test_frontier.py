"""The Pareto frontier of deltas on hand-made score tables: domination, ties, merge, resume."""

from __future__ import annotations

import json
from collections import Counter

from crsp_ops.evolve.frontier import Frontier

BASE = {"0": 0.0, "1": 0.0, "2": 0.0}


def table(rows):
    """``rows``: (deltas, parents, {example: (correct, tokens)}) in id order."""
    frontier = Frontier()
    for deltas, parents, scores in rows:
        cid = frontier.add(deltas, parents=parents)
        for example, (correct, tokens) in scores.items():
            frontier.record(cid, example, correct, tokens)
    return frontier


def test_domination_is_per_example_on_both_objectives():
    f = table([
        (BASE, (), {"a": (1, 30), "b": (0, 40)}),
        ({**BASE, "0": 1.0}, (0,), {"a": (1, 20), "b": (0, 40)}),  # shorter on a: dominates 0
        ({**BASE, "1": 1.0}, (0,), {"a": (0, 5), "b": (1, 50)}),  # a trade-off: stays
        ({**BASE, "2": 1.0}, (0,), {"c": (0, 99)}),  # shares no example: never dominated
    ])
    assert f.front() == [1, 2, 3]
    # on a and on b, 1 and 2 trade correctness for length: both lead (half each); 3 leads on c
    assert f.leads() == {1: 1.0, 2: 1.0, 3: 1.0}
    assert f.led_examples(2) == {"a", "b"} and f.led_examples(3) == {"c"}


def test_ties_never_dominate_and_share_the_lead():
    f = table([
        (BASE, (), {"a": (1, 10), "b": (1, 10)}),
        ({**BASE, "0": 0.5}, (0,), {"a": (1, 10), "b": (1, 10)}),
    ])
    assert f.front() == [0, 1]
    assert f.leads() == {0: 1.0, 1: 1.0}  # two examples, each shared by the two
    draws = Counter(f.sample_parent(seed=3, iteration=i) for i in range(200))
    assert set(draws) == {0, 1} and min(draws.values()) > 60
    assert f.add({**BASE, "0": 0.5}) == 1  # equal deltas are the same candidate


def test_parent_sampling_follows_the_leads():
    f = table([
        (BASE, (), {"a": (1, 10), "b": (1, 10), "c": (1, 10), "d": (0, 50)}),
        ({**BASE, "1": 1.0}, (0,), {"a": (0, 5), "b": (0, 90), "c": (0, 90), "d": (1, 50)}),
    ])
    assert f.leads() == {0: 2.5, 1: 1.5}  # a is shared (1 is shorter but wrong)
    draws = Counter(f.sample_parent(seed=0, iteration=i) for i in range(400))
    assert 0.5 < draws[0] / 400 < 0.75


def test_merge_takes_each_cluster_from_the_candidate_that_changed_it():
    root = {"0": 0.0, "1": 0.0, "2": 0.0, "3": 0.0}
    f = table([
        (root, (), {"a": (0, 70), "b": (0, 70)}),
        ({**root, "0": 1.0, "3": 2.0}, (0,), {"a": (1, 40), "b": (0, 60)}),  # good on a
        ({**root, "2": -1.0, "3": 1.0}, (0,), {"a": (0, 60), "b": (1, 30)}),  # good on b
        ({**root, "1": 0.5}, (0,), {"a": (0, 80), "b": (0, 80)}),  # dominated by every other
    ])
    assert f.front() == [1, 2]
    assert f.complementary_pair() == (1, 2)
    merged = f.merge(1, 2)
    # 0 from candidate 1, 2 from candidate 2, 3 changed by both: equal leads -> the mean
    assert merged == {"0": 1.0, "1": 0.0, "2": -1.0, "3": 1.5}
    assert f.complementary_pair() is None  # a pair is merged once
    child = f.add(merged, parents=(1, 2))
    assert f.common_ancestor(child, 1) == 1 and f.common_ancestor(1, 2) == 0


def test_lessons_show_summaries_and_changed_clusters_never_examples():
    f = table([
        (BASE, (), {"ex-17": (1, 30)}),
        ({**BASE, "2": -0.75}, (0,), {"ex-17": (1, 12)}),
    ])
    f.set_lesson(1, "Filler cluster 2 down keeps answers correct.")
    text = f.lessons(BASE)
    assert "candidate 1" in text and "2: -0.75" in text and "Filler cluster 2 down" in text
    assert "ex-17" not in text and "candidate 0" not in text  # dominated: not a lesson


def test_resume_round_trips_the_table_and_the_draws():
    f = table([
        (BASE, (), {"a": (1, 10), "b": (0, 10)}),
        ({**BASE, "0": 1.0}, (0,), {"a": (0, 5), "b": (1, 10)}),
    ])
    f.set_lesson(0, "keep")
    f.merge(0, 1)
    restored = Frontier.from_json(json.loads(json.dumps(f.to_json())))
    assert restored.to_json() == f.to_json()
    assert [restored.sample_parent(1, i) for i in range(20)] == \
        [f.sample_parent(1, i) for i in range(20)]
    assert restored.complementary_pair() is None and restored.table() == f.table()
