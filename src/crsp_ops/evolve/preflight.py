"""Check an evolution job's inputs before its MLflow run opens.

A wrong path or a bad deltas file then costs one line and exit code 2, and leaves no FAILED run
for ``crsp-ops compare`` to draw. ``run_job`` reads the same files again; they are small.
"""

from __future__ import annotations

from typing import Any

from crsp_ops.config import ConfigError
from crsp_ops.evolve.inputs import (
    load_cluster_inputs,
    load_initial_deltas,
    load_questions,
    select_pool,
)
from crsp_ops.evolve.proposer_factory import reflector_client
from crsp_ops.evolve.reflector_server import prompt_fit
from crsp_ops.evolve.session import JobPaths
from crsp_ops.models.model_ref import require_model


def check_job_inputs(paths: JobPaths, settings: Any) -> None:
    """Raise the error ``run_job`` would raise later, now: model, clusters, deltas, pool.

    Raises:
        MissingInputError: a path that does not exist (the message names the stage to run).
        DataError: a file that exists but holds the wrong thing (e.g. deltas keys).
        ConfigError: ``evolve.pool_indices`` outside the pool.
    """
    require_model(paths.model_dir)
    clusters = load_cluster_inputs(paths.clusters_dir)
    load_initial_deltas(paths.initial_deltas, clusters.n_clusters)
    questions = load_questions(paths.pool, heldout_size=settings.financebench.heldout_size,
                               seed=settings.financebench.seed)
    try:
        select_pool(questions.pool, settings.evolve.pool_index_list)
    except ValueError as error:
        raise ConfigError(f"{error}: choose indices below {len(questions.pool)}") from None


def check_reflector(settings: Any) -> None:
    """Raise now what the reflector's first request would: no server, no such model, no room.

    Raises:
        ConfigError: the endpoint cannot be reached, serves other models only, or
            ``reflector.max_tokens`` leaves no room for a prompt in the model's context.
    """
    config = settings.reflector
    prompt_fit(reflector_client(settings), model=config.model, max_tokens=config.max_tokens,
               context_tokens=config.context_tokens, tokenizer=config.tokenizer,
               timeout_s=config.timeout_s)
