"""The Optuna baseline: ask/tell over the same deltas, seeded, the initial deltas first.

Iteration i evaluates the params of trial ``pending``; ``propose`` tells that trial its
minibatch composite and asks the next. The first call enqueues the initial deltas (the ones
iteration 0 evaluated) and tells them, so the study starts where the reflector starts. The
study lives in its own storage (Optuna cannot share MLflow's database), so a resumed run loads
it and continues from the pending trial.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from crsp_ops.evolve.iteration import Evidence, Proposal
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.steering.deltas import Deltas, validate_deltas

logger = logging.getLogger(__name__)

JOURNAL_PREFIX = "journal:"


def param_name(cluster_id: str) -> str:
    """Optuna parameter name of a cluster's delta."""
    return f"delta_{cluster_id}"


def search_ranges(
    initial: Mapping[str, float],
    *,
    low: float,
    high: float,
    overrides: Mapping[str, tuple[float, float]],
) -> dict[str, tuple[float, float]]:
    """Per-cluster ``(low, high)``, widened to include the initial delta (it is enqueued).

    >>> search_ranges({"0": -4.0, "1": 0.0}, low=-3, high=3, overrides={"1": (-1, 1)})
    {'0': (-4.0, 3.0), '1': (-1.0, 1.0)}
    """
    unknown = set(overrides) - set(initial)
    if unknown:
        raise ValueError(f"optuna.cluster_ranges names unknown cluster ids {sorted(unknown)}")
    out = {}
    for cid, value in initial.items():
        lo, hi = overrides.get(cid, (low, high))
        out[cid] = (float(min(lo, value)), float(max(hi, value)))
    return out


def resolve_storage(storage: str, out_dir: Path) -> Any:
    """``""`` → ``sqlite:///<out>/optuna.db``; ``journal:<path>`` → a journal file; else a URL."""
    if not storage:
        out_dir.mkdir(parents=True, exist_ok=True)  # sqlite creates the file, not its folder
        return f"sqlite:///{(out_dir / 'optuna.db').resolve()}"
    if storage.startswith(JOURNAL_PREFIX):
        from optuna.storages import JournalStorage
        from optuna.storages.journal import JournalFileBackend

        return JournalStorage(JournalFileBackend(storage[len(JOURNAL_PREFIX):]))
    return storage


def make_sampler(kind: str, seed: int) -> Any:
    """A seeded TPE or random sampler."""
    import optuna

    if kind == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if kind == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"unknown optuna sampler {kind!r}; use tpe or random")


class OptunaProposer(Proposer):
    """Propose the params of the next Optuna trial (see the module docstring).

    Args:
        study: an ``optuna.Study`` (direction maximize), created or loaded by the caller.
        ranges: per-cluster ``(low, high)`` search range.
    """

    name = "optuna"

    def __init__(self, study: Any, ranges: Mapping[str, tuple[float, float]]) -> None:
        import optuna

        if study.direction != optuna.study.StudyDirection.MAXIMIZE:
            raise ValueError("the Optuna study must maximize the composite score")
        self.study = study
        self.ranges = dict(ranges)
        self.distributions = {
            param_name(cid): optuna.distributions.FloatDistribution(lo, hi)
            for cid, (lo, hi) in self.ranges.items()
        }
        self.pending: int | None = None  # trial whose params the current iteration evaluates

    def propose(self, evidence: Evidence) -> Proposal:
        """Tell the pending trial its composite, then ask the next trial."""
        if self.pending is None:
            self.study.enqueue_trial(
                {param_name(cid): value for cid, value in evidence.deltas.items()},
                skip_if_exists=True,
            )
            self.pending = self.study.ask(self.distributions).number
        self.study.tell(self.pending, evidence.scores["composite_score"], skip_if_finished=True)
        trial = self.study.ask(self.distributions)
        self.pending = trial.number
        deltas = self._deltas(trial.params)
        return Proposal(deltas=deltas, metrics={"optuna_trial": float(trial.number)})

    def _deltas(self, params: Mapping[str, float]) -> Deltas:
        raw = {cid: params[param_name(cid)] for cid in self.ranges}
        return validate_deltas(raw, n_clusters=len(raw), clamp=None)

    def state_dict(self) -> dict[str, Any]:
        """The pending trial number (the study itself lives in its storage)."""
        return {"pending_trial": self.pending, "study_name": self.study.study_name}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from the pending trial."""
        pending = state.get("pending_trial")
        self.pending = None if pending is None else int(pending)


def open_study(*, storage: Any, study_name: str, sampler: Any) -> Any:
    """Create or load (resume) a maximising study."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    return optuna.create_study(
        storage=storage, study_name=study_name, sampler=sampler, direction="maximize",
        load_if_exists=True,
    )
