"""Build the configured proposer (registry by name; the heavy clients load lazily)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from crsp_ops.config.evolve_config import parse_cluster_ranges
from crsp_ops.evolve.offline_proposer import OfflineProposer
from crsp_ops.evolve.optuna_proposer import (
    OptunaProposer,
    make_sampler,
    open_study,
    param_name,
    resolve_storage,
    search_ranges,
)
from crsp_ops.evolve.proposer import Proposer
from crsp_ops.evolve.reflector import ReflectorProposer, make_openai_client
from crsp_ops.evolve.reflector_server import prompt_fit
from crsp_ops.evolve.token_usage import ClusterCounter


def build_proposer(
    kind: str,
    settings,
    *,
    token_clusters: np.ndarray,
    n_clusters: int,
    initial_deltas: Mapping[str, float],
    out_dir: Path,
    tokenize: Callable[[str], Sequence[int]],
    worker_attrs: Mapping[str, str] | None = None,
) -> Proposer:
    """Return the ``reflector``, ``optuna`` or ``offline`` proposer configured by ``settings``.

    ``worker_attrs`` say who runs it (worker id, MLflow run); Optuna records them on its trials.
    """
    builders = {"reflector": _reflector, "optuna": _optuna, "offline": _offline}
    if kind not in builders:
        raise ValueError(f"unknown proposer {kind!r}; use one of {sorted(builders)}")
    return builders[kind](settings, token_clusters=token_clusters, n_clusters=n_clusters,
                          initial_deltas=initial_deltas, out_dir=out_dir, tokenize=tokenize,
                          worker_attrs=worker_attrs or {})


def _reflector(settings, *, n_clusters, **_unused) -> Proposer:

    config = settings.reflector
    client = reflector_client(settings)
    fit = prompt_fit(client, model=config.model, max_tokens=config.max_tokens,
                     context_tokens=config.context_tokens, tokenizer=config.tokenizer,
                     timeout_s=config.timeout_s)
    return ReflectorProposer(
        client, model=config.model, n_clusters=n_clusters, clamp=settings.evolve.clamp,
        max_attempts=config.max_attempts, retry_backoff_s=config.retry_backoff_s,
        temperature=config.temperature, max_tokens=config.max_tokens,
        k_longest=config.k_longest, max_response_chars=config.max_response_chars,
        prompt_fit=fit,
    )


def reflector_client(settings) -> Any:
    """The reflector's client, as ``build_proposer`` makes it."""
    config = settings.reflector
    return make_openai_client(base_url=config.base_url, api_key_env=config.api_key_env,
                              timeout_s=config.timeout_s)


def _optuna(settings, *, initial_deltas, out_dir, worker_attrs, **_unused) -> Proposer:

    config = settings.optuna
    ranges = search_ranges(
        initial_deltas, low=config.delta_low, high=config.delta_high,
        overrides=parse_cluster_ranges(config.cluster_ranges),
    )
    first = {param_name(cid): value for cid, value in initial_deltas.items()}
    sampler = make_sampler(  # the budget: the study's shared trials, else this run's iterations
        config.sampler, config.seed + config.worker,
        budget=config.n_trials or settings.evolve.iterations, x0=first,
        ranges={param_name(cid): bounds for cid, bounds in ranges.items()})
    study = open_study(storage=resolve_storage(config.storage, out_dir),
                       study_name=config.study_name, sampler=sampler, first_params=first)
    return OptunaProposer(study, ranges, n_trials=config.n_trials,
                          trial_attrs={"worker": str(config.worker), **worker_attrs})


def _offline(settings, *, token_clusters, n_clusters, tokenize, **_unused) -> Proposer:

    return OfflineProposer(
        ClusterCounter(token_clusters, n_clusters, tokenize),
        clamp=settings.evolve.clamp, step=settings.evolve.offline_step,
        length_contrast=settings.evolve.offline_length_contrast,
        eos_up_only=settings.evolve.offline_eos_up_only,
        max_step=settings.evolve.offline_max_step or None,
    )
