"""The reflector's evolving summary: its per-iteration updates, appended and served back."""

from __future__ import annotations

from dataclasses import dataclass

FIRST_ITERATION = "First iteration; no prior learnings."


@dataclass(frozen=True)
class SummaryEntry:
    """One appended update."""

    iteration: int
    text: str


def render_summary(entries: list[SummaryEntry]) -> str:
    """The accumulated summary as the reflector reads it.

    >>> render_summary([])
    'First iteration; no prior learnings.'
    >>> render_summary([SummaryEntry(0, "Cut filler.")])
    '- Iteration 0: Cut filler.'
    """
    if not entries:
        return FIRST_ITERATION
    return "\n".join(f"- Iteration {entry.iteration}: {entry.text}" for entry in entries)


def append_entry(entries: list[SummaryEntry], iteration: int, text: str) -> list[SummaryEntry]:
    """Return ``entries`` plus this iteration's update (replacing one from a repeated iteration)."""
    kept = [entry for entry in entries if entry.iteration != iteration]
    return [*kept, SummaryEntry(iteration, text.strip())]
