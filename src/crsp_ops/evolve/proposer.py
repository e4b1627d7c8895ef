"""The one interface every proposer of deltas implements, and how the loop picks one."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

from crsp_ops.evolve.iteration import Evidence, Proposal
from crsp_ops.steering.deltas import Deltas

logger = logging.getLogger(__name__)


class Proposer(ABC):
    """Propose the next deltas from the evidence of the last iteration.

    Contract: the loop calls ``propose`` once per finished iteration, in iteration order, with
    the evidence of the deltas it just evaluated (with ``evolve.frontier``: of the frontier
    parent drawn for this iteration, and no call when the next deltas are a frontier merge);
    the proposer returns validated deltas with
    exactly the cluster ids of ``evidence.deltas`` (or a failed ``Proposal``, never invalid
    deltas). Everything a proposer must remember across iterations is in ``state_dict`` (JSON),
    which the loop persists after each iteration and hands to ``load_state_dict`` on resume.
    Before the first iteration of a run (fresh or resumed) the loop asks ``begin`` what to
    evaluate; when it stops on an exception it calls ``release`` so nothing stays claimed.
    """

    name: str = "proposer"

    def begin(self, current: Deltas) -> Deltas | None:
        """Deltas the next iteration evaluates, given the committed ``current`` ones.

        ``None``: nothing is left to evaluate (e.g. a shared budget is spent); the loop ends.
        The default keeps ``current`` (the initial deltas of a fresh run).
        """
        return dict(current)

    def release(self) -> None:  # noqa: B027 - nothing to release by default
        """The loop stops on an exception (Ctrl+C, SIGTERM, an error) before ``propose``."""

    @abstractmethod
    def propose(self, evidence: Evidence) -> Proposal:
        """Return the deltas to evaluate next (or a failed proposal with its reason)."""

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable state to resume from (empty for stateless proposers)."""
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:  # noqa: B027 - stateless default
        """Restore what ``state_dict`` returned."""


def resolve_proposer_kind(configured: str, *, reflector_base_url: str) -> str:
    """Turn ``auto`` into a concrete proposer and say so in the log.

    ``reflector_base_url`` is the effective one: the configured value, else ``$OPENAI_BASE_URL``.

    >>> resolve_proposer_kind("auto", reflector_base_url="")
    'offline'
    >>> resolve_proposer_kind("auto", reflector_base_url="http://127.0.0.1:8000/v1")
    'reflector'
    """
    if configured not in ("auto", "reflector", "optuna", "offline"):
        raise ValueError(f"unknown proposer {configured!r}")
    if configured == "reflector" and not reflector_base_url.strip():
        raise ValueError(
            "evolve.proposer=reflector needs reflector.base_url or $OPENAI_BASE_URL "
            "(e.g. https://api.openai.com/v1 or an OpenAI-compatible server)"
        )
    if configured != "auto":
        return configured
    if reflector_base_url.strip():
        logger.info("proposer: reflector at %s (evolve.proposer=auto)", reflector_base_url)
        return "reflector"
    logger.warning(
        "proposer: offline (evolve.proposer=auto and no reflector endpoint is configured; "
        "set reflector.base_url or $OPENAI_BASE_URL to use an LLM reflector)"
    )
    return "offline"
