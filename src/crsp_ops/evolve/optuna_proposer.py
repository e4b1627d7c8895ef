"""The Optuna baseline: ask/tell over the same deltas, seeded, the initial deltas first.

Each trial is told exactly the composite of its own params, and the study starts from the
deltas the reflector starts from.

Design: docs/design/evolve.md#optuna_proposer.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState
from sqlalchemy.exc import SQLAlchemyError

from crsp_ops.evolve.iteration import Evidence, Proposal
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.steering.deltas import Deltas, validate_deltas

logger = logging.getLogger(__name__)

JOURNAL_PREFIX = "journal:"
RETRY_OF = "retry_of"  # user attr: the interrupted trial whose params this one evaluates again
OVER_BUDGET = "over_budget"  # user attr of a trial asked past the shared budget (told FAIL)
TAKEN = (TrialState.COMPLETE, TrialState.RUNNING)  # the trials a shared budget counts
SAMPLED_BY = "sampled_by"  # user attr: enqueued | model | random
SAMPLERS = ("tpe", "cmaes", "random")
CMAES_SIGMA0 = 0.5  # CMA-ES's initial step, in delta units (the widest range sets the scale)


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
        return JournalStorage(JournalFileBackend(storage[len(JOURNAL_PREFIX):]))
    return storage


def startup_trials(budget: int) -> int:
    """TPE's random startup trials for a search of ``budget`` trials: ``ceil(budget / 4)``.

    >>> [startup_trials(n) for n in (8, 16, 32, 1)]
    [2, 4, 8, 1]
    """
    if budget < 1:
        raise ValueError(f"a search budget of {budget} trials: it must be >= 1")
    return math.ceil(budget / 4)


def make_sampler(kind: str, seed: int, *, budget: int,
                 x0: Mapping[str, float] | None = None,
                 ranges: Mapping[str, tuple[float, float]] | None = None) -> Any:
    """A seeded sampler that runs as named within ``budget`` trials.

    ``tpe``: multivariate TPE with ``startup_trials(budget)`` random trials first. ``cmaes``:
    CMA-ES started at ``x0`` (the initial deltas, by parameter name) with a step of
    ``CMAES_SIGMA0`` delta units over the widest of ``ranges`` (by parameter name).
    ``random``: uniform random search.
    """
    with warnings.catch_warnings():  # x0/sigma0 and multivariate warn of API changes to come
        warnings.simplefilter("ignore", FutureWarning)
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        if kind == "tpe":
            return optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=startup_trials(budget), multivariate=True,
                warn_independent_sampling=False)
        if kind == "cmaes":
            if not x0 or not ranges:
                raise ValueError("the cmaes sampler starts at x0: pass x0 and ranges")
            widest = max(high - low for low, high in ranges.values())
            return optuna.samplers.CmaEsSampler(
                x0=dict(x0), sigma0=CMAES_SIGMA0 / widest, seed=seed, n_startup_trials=1,
                warn_independent_sampling=False)
        if kind == "random":
            return optuna.samplers.RandomSampler(seed=seed)
    raise ValueError(f"unknown optuna sampler {kind!r}; use one of {', '.join(SAMPLERS)}")


def sampled_by(trial: Any, frozen: Any) -> str:
    """How an asked trial's params were chosen: ``enqueued``, ``model`` or ``random``.

    ``trial`` is the asked ``Trial``, ``frozen`` its ``FrozenTrial``. ``model``: the sampler's
    relative (joint) model gave every parameter; before the model has data (TPE's startup
    trials) they come from random sampling.
    """
    if frozen.system_attrs.get("fixed_params"):
        return "enqueued"
    relative = trial.relative_params  # cached by the ask that suggested the params
    return "model" if relative and set(relative) == set(trial.params) else "random"


class OptunaProposer(Proposer):
    """Propose the params of the next Optuna trial (design: docs/design/evolve.md#optuna_proposer).

    Args:
        study: an ``optuna.Study`` (direction maximize), from ``open_study``.
        ranges: per-cluster ``(low, high)`` search range.
        n_trials: the study's trial budget shared by every worker (0: no shared budget).
        trial_attrs: user attrs set on every trial this worker asks (its worker id, its run).
    """

    name = "optuna"

    def __init__(self, study: Any, ranges: Mapping[str, tuple[float, float]], *,
                 n_trials: int = 0, trial_attrs: Mapping[str, str] | None = None) -> None:
        if study.direction != optuna.study.StudyDirection.MAXIMIZE:
            raise ValueError("the Optuna study must maximize the composite score")
        if n_trials < 0:
            raise ValueError(f"n_trials={n_trials} must be >= 0 (0: no shared budget)")
        self.study = study
        self.ranges = dict(ranges)
        self.n_trials = n_trials
        self.trial_attrs = dict(trial_attrs or {})
        self.distributions = {
            param_name(cid): optuna.distributions.FloatDistribution(lo, hi)
            for cid, (lo, hi) in self.ranges.items()
        }
        self.pending: int | None = None  # trial whose params the current iteration evaluates

    def begin(self, current: Deltas) -> Deltas | None:
        """The pending trial's params (resumed), else those of a newly asked trial."""
        if self.pending is not None:
            trial = self._trial(self.pending)
            if trial.state == TrialState.RUNNING:
                return self._deltas(trial.params)
            self._retry(trial)
            self.pending = None
        return self._ask()

    def propose(self, evidence: Evidence) -> Proposal:
        """Tell the pending trial the composite of its params, then ask the next trial."""
        if self.pending is None:
            raise RuntimeError("OptunaProposer.propose before begin: no trial was asked")
        told = self._trial(self.pending)
        if self._deltas(told.params) != dict(evidence.deltas):
            raise RuntimeError(f"trial {told.number}'s params are not the evaluated deltas")
        self.study.tell(told.number, evidence.scores["composite_score"])
        self.pending = None
        metrics = {"optuna_trial": float(told.number),
                   "optuna_model_based": float(told.user_attrs.get(SAMPLED_BY) == "model")}
        if evidence.final:
            return Proposal(deltas=dict(evidence.deltas), metrics=metrics)
        deltas = self._ask()
        if deltas is None:
            return Proposal(deltas=dict(evidence.deltas), metrics=metrics, stop=True)
        return Proposal(deltas=deltas, metrics=metrics)

    def release(self) -> None:
        """Tell the pending trial FAIL: it never stays RUNNING after an interrupted worker."""
        if self.pending is not None:
            self.study.tell(self.pending, state=TrialState.FAIL, skip_if_finished=True)

    def _ask(self) -> Deltas | None:
        """Ask a trial within the shared budget (``None``: spent), and make it pending."""
        if self.n_trials and self._taken() >= self.n_trials:
            return None
        trial = self.study.ask(self.distributions)
        for key, value in {**self.trial_attrs,
                           SAMPLED_BY: sampled_by(trial, self._trial(trial.number))}.items():
            trial.set_user_attr(key, value)
        if self.n_trials and self._taken(before=trial.number) >= self.n_trials:
            # another worker's ask won the last slot between the count and this ask
            trial.set_user_attr(OVER_BUDGET, True)
            self.study.tell(trial.number, state=TrialState.FAIL)
            return None
        self.pending = trial.number
        return self._deltas(trial.params)

    def _taken(self, before: int | None = None) -> int:
        """COMPLETE + RUNNING trials (+ WAITING ones numbered below ``before``, if given)."""
        states = TAKEN if before is None else (*TAKEN, TrialState.WAITING)
        trials = self.study.get_trials(deepcopy=False, states=states)
        return sum(1 for t in trials if before is None or t.number < before)

    def _retry(self, trial: Any) -> None:
        """Enqueue the params of an interrupted (FAIL) trial once, for whichever worker asks."""
        if trial.state != TrialState.FAIL or trial.user_attrs.get(OVER_BUDGET):
            return
        if any(t.user_attrs.get(RETRY_OF) == trial.number
               for t in self.study.get_trials(deepcopy=False)):
            return
        self.study.enqueue_trial(trial.params, user_attrs={RETRY_OF: trial.number})

    def _trial(self, number: int) -> Any:
        return self.study.get_trials(deepcopy=False)[number]

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


def open_study(*, storage: Any, study_name: str, sampler: Any,
               first_params: Mapping[str, float] | None = None, attempts: int = 5) -> Any:
    """Create or load (resume, join) a maximising study.

    Only the worker whose call creates the study enqueues ``first_params`` (the initial
    deltas), so they are enqueued once per study however many workers start at once. Workers
    starting together on an empty database can race on Optuna's table creation; that is
    retried ``attempts`` times.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    for attempt in range(1, attempts + 1):
        try:
            return _create_or_load(storage, study_name, sampler, first_params)
        except SQLAlchemyError as error:
            if attempt == attempts:
                raise
            logger.warning("opening study %s failed (%s); retrying", study_name, error)
            time.sleep(0.5 * attempt)
    raise AssertionError("unreachable")


def _create_or_load(storage: Any, study_name: str, sampler: Any,
                    first_params: Mapping[str, float] | None) -> Any:
    try:
        study = optuna.create_study(storage=storage, study_name=study_name, sampler=sampler,
                                    direction="maximize")
    except optuna.exceptions.DuplicatedStudyError:
        return optuna.load_study(storage=storage, study_name=study_name, sampler=sampler)
    if first_params is not None:
        study.enqueue_trial(dict(first_params))
    return study
