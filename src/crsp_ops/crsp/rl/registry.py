"""Advantage estimators and policy losses, registered by name (as verl's ``register_adv_est``).

A new one is a function and a decorator beside it; an algorithm (``algorithms.ALGORITHMS``)
names one of each. The contracts of the two kinds are in ``advantages`` (estimators) and
``trrpg.LossTerms`` (losses).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Registry:
    """Functions by name, of one kind; an unknown name is refused with the choices."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self._functions: dict[str, Callable[..., Any]] = {}

    def register(self, name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """Decorator: record the function under ``name`` (a name is registered once)."""
        def decorator(function: Callable[..., Any]) -> Callable[..., Any]:
            if self._functions.get(name, function) is not function:
                raise ValueError(f"{self.kind} {name!r} is already registered")
            self._functions[name] = function
            return function
        return decorator

    def get(self, name: str) -> Callable[..., Any]:
        """The function registered as ``name``."""
        if name not in self._functions:
            raise ValueError(f"unknown {self.kind} {name!r}; choose one of {self.names()}")
        return self._functions[name]

    def names(self) -> list[str]:
        """The registered names, sorted."""
        return sorted(self._functions)


ADVANTAGE_ESTIMATORS = Registry("advantage estimator")
POLICY_LOSSES = Registry("policy loss")
register_adv_est = ADVANTAGE_ESTIMATORS.register
register_policy_loss = POLICY_LOSSES.register
get_adv_est = ADVANTAGE_ESTIMATORS.get
get_policy_loss = POLICY_LOSSES.get
