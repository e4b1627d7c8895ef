"""Field helpers shared by every settings section."""

from __future__ import annotations

from dataclasses import field


def bounded(low: float | None = None, high: float | None = None, *, open_low: bool = False):
    """A dataclass field whose float value must lie in ``[low, high]`` (``(low, high]`` if open)."""
    return field(metadata={"low": low, "high": high, "open_low": open_low})
