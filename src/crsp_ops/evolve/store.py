"""The evolution output directory: every file written atomically, and the resume state.

``state.json`` is written last in each iteration (the commit point).

Design: docs/design/evolve.md#store.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np

from crsp_ops.atomic_io import atomic_write_json, atomic_write_text, remove_stale_temp_files
from crsp_ops.evolve.iteration import Exchange, IterationRecord
from crsp_ops.steering.codegen import write_processor
from crsp_ops.steering.deltas import Deltas, save_deltas

DELTAS_CURRENT = "deltas_current.json"
DELTAS_BEST = "deltas_best.json"
PROCESSOR_BEST = "processor_best.py"
HISTORY = "history.json"
HISTORY_PLOT = "history_plot.json"
SUMMARY = "evolving_summary.md"
PLOT = "evolution_lengths.png"
STATE = "state.json"
FRONTIER = "frontier.json"
MLFLOW_RUN = "mlflow_run.json"
HELDOUT = "heldout.json"
METRICS = "metrics.json"
REFLECTOR_DIR = "reflector"
STATE_VERSION = 1


class EvolutionStore:
    """Read and write one evolution output directory.

    Args:
        out_dir: the directory (created).
        token_clusters: ``(V,)`` table embedded into ``processor_best.py``.
        n_clusters: number of cluster ids.
    """

    def __init__(self, out_dir: str | Path, token_clusters: np.ndarray, n_clusters: int) -> None:
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.token_clusters = np.asarray(token_clusters)
        self.n_clusters = n_clusters

    def path(self, name: str) -> Path:
        """Path of a file in the output directory."""
        return self.out / name

    def remove_stale_temp_files(self) -> list[Path]:
        """Delete temporary files of writes a killed process never finished; return them."""
        return remove_stale_temp_files(self.out)

    def committed_best(self) -> Deltas | None:
        """The best deltas recorded in ``state.json`` (``None`` before the first commit)."""
        state = self.read_state()
        return None if state is None else dict(state["best"]["deltas"])

    def write_current(self, deltas: Deltas) -> None:
        """``deltas_current.json``."""
        save_deltas(self.path(DELTAS_CURRENT), deltas)

    def write_best(self, deltas: Deltas) -> None:
        """``deltas_best.json`` and ``processor_best.py`` (each atomic)."""
        save_deltas(self.path(DELTAS_BEST), deltas)
        write_processor(
            self.path(PROCESSOR_BEST), self.token_clusters, deltas, n_clusters=self.n_clusters
        )

    def write_history(self, history: Sequence[IterationRecord]) -> None:
        """``history.json``."""
        atomic_write_json(self.path(HISTORY), [row.to_json() for row in history])
        atomic_write_json(self.path(HISTORY_PLOT), [
            {"iteration": row.iteration, **row.scores,
             "best_composite_score": row.best_composite_score}
            for row in history
        ])

    def read_history(self) -> list[IterationRecord]:
        """Rows of ``history.json`` (empty when absent)."""
        path = self.path(HISTORY)
        if not path.exists():
            return []
        return [IterationRecord.from_json(row) for row in json.loads(path.read_text("utf-8"))]

    def write_summary(self, text: str) -> None:
        """``evolving_summary.md``."""
        atomic_write_text(self.path(SUMMARY), text + "\n")

    def write_exchanges(self, iteration: int, exchanges: Sequence[Exchange]) -> list[Path]:
        """Write each LLM attempt's messages and raw reply; return the files written."""
        folder = self.out / REFLECTOR_DIR / f"iter_{iteration:03d}"
        written = []
        for exchange in exchanges:
            stem = folder / f"attempt_{exchange.attempt}"
            written.append(atomic_write_json(
                Path(f"{stem}_messages.json"),
                {"messages": exchange.messages, "request": exchange.request},
            ))
            written.append(atomic_write_text(Path(f"{stem}_reply.txt"), exchange.raw_reply or ""))
            written.append(atomic_write_json(
                Path(f"{stem}_exchange.json"),
                {k: v for k, v in asdict(exchange).items() if k not in ("messages", "request")},
            ))
        return written

    def write_state(self, state: Mapping[str, Any]) -> None:
        """``state.json``: the commit point of an iteration."""
        atomic_write_json(self.path(STATE), {"version": STATE_VERSION, **state})

    def read_state(self) -> dict[str, Any] | None:
        """The resume state, or ``None`` when the directory holds no run.

        Raises:
            ValueError: a state file of another version.
        """
        path = self.path(STATE)
        if not path.exists():
            return None
        state = json.loads(path.read_text("utf-8"))
        if state.get("version") != STATE_VERSION:
            raise ValueError(f"{path}: state version {state.get('version')} != {STATE_VERSION}")
        return state

    def write_json(self, name: str, obj: Any) -> Path:
        """Any other JSON output (``heldout.json``, ``metrics.json``, ``mlflow_run.json``)."""
        return atomic_write_json(self.path(name), obj)

    def read_json(self, name: str) -> Any | None:
        """A JSON output, or ``None`` when absent."""
        path = self.path(name)
        return json.loads(path.read_text("utf-8")) if path.exists() else None
