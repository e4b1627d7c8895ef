"""The Pareto frontier of deltas on hand-made score tables: domination, ties, merge, resume."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
from evolve_testkit import fake_evaluate_truncating

from crsp_ops.evolve.frontier import Frontier
from crsp_ops.evolve.loop import LoopConfig, run_evolution
from crsp_ops.evolve.offline_proposer import OfflineProposer
from crsp_ops.evolve.reflector_prompt import build_messages
from crsp_ops.evolve.store import EvolutionStore
from crsp_ops.evolve.token_usage import ClusterCounter

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


# --- the loop with evolve.frontier on (fake twin backend, offline proposer)

def _loop(out, iterations, *, max_rollouts=0):
    k = 4
    proposer = OfflineProposer(ClusterCounter(np.arange(k), k, tokenize=lambda t: []),
                               clamp=5.0, step=0.5)
    return run_evolution(
        pool=list(range(20)), evaluate=fake_evaluate_truncating, proposer=proposer,
        store=EvolutionStore(out, np.arange(k), k),
        initial_deltas={str(i): 0.0 for i in range(k)},
        cluster_descriptions={str(i): {"description": f"c{i}"} for i in range(k)},
        config=LoopConfig(iterations=iterations, minibatch_size=4, seed=1, stop_on_failure=False,
                          paired_best=True, frontier=True, max_rollouts=max_rollouts),
    )


def test_loop_keeps_the_frontier_logs_it_and_resumes_it(tmp_path):
    whole = _loop(tmp_path / "whole", 9)
    rows = whole.history
    assert all({"frontier_size", "rollouts_cumulative", "frontier_merge"} <= set(r.loop_metrics)
               for r in rows)
    rollouts = [r.loop_metrics["rollouts_cumulative"] for r in rows]
    assert rollouts == sorted(rollouts) and rollouts[0] >= 4
    saved = json.loads((tmp_path / "whole" / "frontier.json").read_text())
    assert saved["columns"][:4] == ["candidate", "iteration", "parents", "on_frontier"]
    assert any(row[3] for row in saved["data"]) and len(saved["data"]) >= 3
    state = json.loads((tmp_path / "whole" / "state.json").read_text())
    assert state["frontier"]["table"]["candidates"] and state["rollouts"] == rollouts[-1]

    _loop(tmp_path / "split", 4)  # stopped after 4 iterations, then resumed to 9
    resumed = _loop(tmp_path / "split", 9)
    assert [r.deltas for r in resumed.history] == [r.deltas for r in rows]
    assert json.loads((tmp_path / "split" / "frontier.json").read_text()) == saved


def test_loop_stops_at_the_rollout_budget(tmp_path):
    outcome = _loop(tmp_path, 50, max_rollouts=20)
    last = outcome.history[-1].loop_metrics["rollouts_cumulative"]
    assert 20 <= last < 20 + 3 * 4  # at most one iteration (≤ 3 generations of 4) past it


def test_reflector_prompt_carries_the_frontier_lessons_not_examples():
    f = table([
        (BASE, (), {"q-1": (1, 30)}),
        ({**BASE, "2": -0.5}, (0,), {"q-1": (1, 10)}),
    ])
    f.set_lesson(1, "Cluster 2 is filler.")
    records = fake_evaluate_truncating([0, 1], BASE).records
    kwargs = dict(cluster_descriptions={"0": "eos"}, deltas=BASE, summary="s", records=records,
                  k_longest=0, max_response_chars=0)
    plain = build_messages(**kwargs)[1]["content"]
    with_frontier = build_messages(**kwargs, frontier_lessons=f.lessons(BASE))[1]["content"]
    assert "Pareto frontier" not in plain
    section = with_frontier.split("## Pareto frontier")[1].split("## All minibatch")[0]
    assert "Cluster 2 is filler." in section and "2: -0.50" in section
    assert "q-1" not in section and "deltas_examples" not in with_frontier
