"""A Pareto frontier of delta candidates over per-example (correctness, length) scores (pure).

GEPA-style: keep every candidate's per-example scores, sample the next parent from the
non-dominated ones, merge complementary ones cluster by cluster; the table round-trips through
JSON, so a resumed loop samples the same parents.

Design: docs/design/evolve.md#frontier.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

Score = tuple[float, float]  # (correct 0/1, response tokens)
MAX_LESSONS = 5  # frontier candidates shown to the reflector


@dataclass
class Candidate:
    """One evaluated deltas vector and what it scored on each example it ran on."""

    id: int
    deltas: dict[str, float]
    parents: tuple[int, ...]  # () for a root; two ids for a merge
    iteration: int  # iteration that first evaluated it
    lesson: str = ""  # the proposer's summary after seeing its answers
    scores: dict[str, Score] = field(default_factory=dict)  # example id -> (correct, tokens)

    def to_json(self) -> dict[str, Any]:
        """The JSON form (scores as ``[correct, tokens]`` pairs)."""
        return {"id": self.id, "deltas": self.deltas, "parents": list(self.parents),
                "iteration": self.iteration, "lesson": self.lesson,
                "scores": {k: list(v) for k, v in self.scores.items()}}

    @classmethod
    def from_json(cls, row: Mapping[str, Any]) -> Candidate:
        """Rebuild a candidate from ``to_json``."""
        return cls(int(row["id"]), dict(row["deltas"]), tuple(row["parents"]),
                   int(row["iteration"]), row.get("lesson", ""),
                   {k: (float(v[0]), float(v[1])) for k, v in row["scores"].items()})


def better_or_equal(a: Score, b: Score) -> bool:
    """``a`` is at least as correct and at most as long as ``b``."""
    return a[0] >= b[0] and a[1] <= b[1]


def dominates(a: Candidate, b: Candidate) -> bool:
    """``a`` dominates ``b`` on their shared examples (design: docs/design/evolve.md#frontier).

    >>> x = Candidate(0, {}, (), 0, scores={"e": (1.0, 10.0)})
    >>> y = Candidate(1, {}, (), 0, scores={"e": (1.0, 12.0)})
    >>> dominates(x, y), dominates(y, x), dominates(x, x)
    (True, False, False)
    """
    shared = a.scores.keys() & b.scores.keys()
    if not shared:
        return False
    if not all(better_or_equal(a.scores[e], b.scores[e]) for e in shared):
        return False
    return any(a.scores[e] != b.scores[e] for e in shared)


class Frontier:
    """The candidate table: add candidates and scores, read the frontier, sample, merge."""

    def __init__(self) -> None:
        self.candidates: dict[int, Candidate] = {}
        self.merged: set[tuple[int, int]] = set()  # pairs already merged (never again)

    # --- building the table

    def add(self, deltas: Mapping[str, float], *, parents: tuple[int, ...] = (),
            iteration: int = 0) -> int:
        """The id of ``deltas``: an existing candidate with equal deltas, else a new one."""
        for candidate in self.candidates.values():
            if candidate.deltas == dict(deltas):
                return candidate.id
        new_id = len(self.candidates)
        self.candidates[new_id] = Candidate(new_id, dict(deltas), tuple(parents), iteration)
        return new_id

    def record(self, candidate_id: int, example_id: str, correct: float, tokens: float) -> None:
        """Score of ``candidate_id`` on one example (a later score of the same example wins)."""
        self.candidates[candidate_id].scores[str(example_id)] = (float(correct), float(tokens))

    def record_result(self, candidate_id: int, records: Any) -> None:
        """Record every graded answer (``example_id``, ``is_correct``, ``response_tokens``)."""
        for r in records:
            self.record(candidate_id, r.example_id, float(bool(r.is_correct)), r.response_tokens)

    def set_lesson(self, candidate_id: int, text: str) -> None:
        """The proposer's summary after seeing ``candidate_id`` (kept when ``text`` is empty)."""
        if text.strip():
            self.candidates[candidate_id].lesson = text.strip()

    # --- reading it

    def front(self) -> list[int]:
        """Ids of the candidates no other candidate dominates, in id order."""
        table = list(self.candidates.values())
        return [c.id for c in table if c.scores and not any(
            dominates(other, c) for other in table if other.id != c.id)]

    def leads(self) -> dict[int, float]:
        """Per frontier candidate, how many examples it leads on (ties share an example)."""
        front = [self.candidates[i] for i in self.front()]
        credit = {c.id: 0.0 for c in front}
        examples = sorted({e for c in front for e in c.scores})
        for example in examples:
            scored = [c for c in front if example in c.scores]
            leaders = [c for c in scored if not any(
                better_or_equal(o.scores[example], c.scores[example])
                and o.scores[example] != c.scores[example] for o in scored)]
            for c in leaders:
                credit[c.id] += 1.0 / len(leaders)
        return credit

    def led_examples(self, candidate_id: int) -> set[str]:
        """Examples ``candidate_id`` leads on (alone or tied) among the frontier."""
        front = [self.candidates[i] for i in self.front()]
        mine = self.candidates[candidate_id].scores
        return {e for e, score in mine.items() if not any(
            e in o.scores and better_or_equal(o.scores[e], score) and o.scores[e] != score
            for o in front)}

    def sample_parent(self, seed: int, iteration: int) -> int:
        """A frontier candidate, drawn with probability proportional to its leads.

        Deterministic in ``(seed, iteration)``, so a resumed loop draws the same parent.
        """
        credit = self.leads()
        if not credit:
            raise ValueError("the frontier is empty: record scores first")
        ids = sorted(credit)
        weights = np.array([credit[i] for i in ids], dtype=np.float64)
        weights = weights / weights.sum() if weights.sum() > 0 else None
        rng = np.random.default_rng([seed, iteration])
        return int(rng.choice(ids, p=weights))

    def complementary_pair(self) -> tuple[int, int] | None:
        """The not-yet-merged frontier pair whose leads differ most both ways (or ``None``)."""
        front = self.front()
        led = {i: self.led_examples(i) for i in front}
        best, best_gain = None, 0
        for n, a in enumerate(front):
            for b in front[n + 1:]:
                if (a, b) in self.merged:
                    continue
                gain = min(len(led[a] - led[b]), len(led[b] - led[a]))
                if gain > best_gain:
                    best, best_gain = (a, b), gain
        return best

    def common_ancestor(self, a: int, b: int) -> int | None:
        """The nearest candidate both descend from (themselves included), or ``None``."""
        mine = self._ancestors(a)
        for candidate in self._ancestors_in_order(b):
            if candidate in mine:
                return candidate
        return None

    def merge(self, a: int, b: int) -> dict[str, float]:
        """Merge ``a`` and ``b`` cluster by cluster, pair marked used (docs/design/evolve.md)."""
        self.merged.add((min(a, b), max(a, b)))
        da, db = self.candidates[a].deltas, self.candidates[b].deltas
        ancestor_id = self.common_ancestor(a, b)
        base = self.candidates[ancestor_id].deltas if ancestor_id is not None else {}
        credit = self.leads()
        out = {}
        for cluster in da:
            va, vb, v0 = da[cluster], db[cluster], base.get(cluster)
            if va == vb or vb == v0:
                out[cluster] = va
            elif va == v0:
                out[cluster] = vb
            elif credit.get(a, 0.0) != credit.get(b, 0.0):
                out[cluster] = va if credit.get(a, 0.0) > credit.get(b, 0.0) else vb
            else:
                out[cluster] = (va + vb) / 2.0
        return out

    def lessons(self, initial: Mapping[str, float]) -> str:
        """What the frontier teaches, for the reflector.

        Each leader's summary and its deltas relative to ``initial`` (changed clusters only);
        never per-example data.
        """
        credit = self.leads()
        order = sorted(credit, key=lambda i: (-credit[i], i))[:MAX_LESSONS]
        lines = []
        for i in order:
            c = self.candidates[i]
            correct = np.mean([s[0] for s in c.scores.values()])
            tokens = np.mean([s[1] for s in c.scores.values()])
            changed = ", ".join(f"{k}: {v - initial.get(k, 0.0):+.2f}"
                                for k, v in sorted(c.deltas.items(), key=lambda kv: int(kv[0]))
                                if abs(v - initial.get(k, 0.0)) > 1e-12) or "none"
            lines.append(
                f"- candidate {i} (iteration {c.iteration}; leads on {credit[i]:.1f} of "
                f"{len(c.scores)} examples; correctness {correct:.2f}, mean tokens {tokens:.1f}); "
                f"changes from the initial deltas: {changed}. Lesson: {c.lesson or '(none)'}")
        return "\n".join(lines)

    # --- persistence and logging

    def to_json(self) -> dict[str, Any]:
        """The whole table (``from_json`` restores it exactly)."""
        return {"candidates": [c.to_json() for c in self.candidates.values()],
                "merged": sorted([list(p) for p in self.merged])}

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Frontier:
        """Rebuild a table (an empty one from ``None``)."""
        frontier = cls()
        for row in (data or {}).get("candidates", []):
            candidate = Candidate.from_json(row)
            frontier.candidates[candidate.id] = candidate
        frontier.merged = {(int(a), int(b)) for a, b in (data or {}).get("merged", [])}
        return frontier

    def table(self) -> dict[str, Any]:
        """One row per candidate (``{"columns", "data"}``, MLflow's table layout)."""
        front, credit = set(self.front()), self.leads()
        columns = ["candidate", "iteration", "parents", "on_frontier", "leads", "examples",
                   "correctness", "mean_tokens"]
        data = []
        for c in self.candidates.values():
            scores = list(c.scores.values())
            data.append([c.id, c.iteration, list(c.parents), c.id in front,
                         credit.get(c.id, 0.0), len(scores),
                         float(np.mean([s[0] for s in scores])) if scores else None,
                         float(np.mean([s[1] for s in scores])) if scores else None])
        return {"columns": columns, "data": data}

    def _ancestors(self, start: int) -> set[int]:
        return set(self._ancestors_in_order(start))

    def _ancestors_in_order(self, start: int) -> list[int]:
        """``start`` and its ancestors, breadth first (nearest first)."""
        seen, queue = [], [start]
        while queue:
            node = queue.pop(0)
            if node in seen or node not in self.candidates:
                continue
            seen.append(node)
            queue.extend(self.candidates[node].parents)
        return seen


def pareto_indices(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points no other point beats on both coordinates (both maximised).

    Sorted by the first coordinate: the staircase drawn as a run's frontier.

    >>> pareto_indices([(0.2, 0.9), (0.5, 0.5), (0.4, 0.4), (0.9, 0.1)])
    [0, 1, 3]
    """
    keep = [i for i, (x, y) in enumerate(points) if not any(
        ox >= x and oy >= y and (ox, oy) != (x, y) for ox, oy in points)]
    return sorted(keep, key=lambda i: points[i])
