"""Buffer metric points and write them in batches: one store write per batch, not per value."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from mlflow.entities import Metric

MAX_METRICS_PER_BATCH = 1000  # MLflow's log_batch limit


class MetricBuffer:
    """Collects ``(key, value, step)`` points; flushes by count or age through ``write``."""

    def __init__(
        self,
        write: Callable[[list[Metric]], None],
        flush_points: int,
        flush_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._write = write
        self._flush_points = min(flush_points, MAX_METRICS_PER_BATCH)
        self._flush_seconds = flush_seconds
        self._clock = clock
        self._pending: list[Metric] = []
        self._last_flush = clock()

    def add(self, metrics: Mapping[str, float], step: int) -> None:
        """Queue one value per key at ``step``; writes when the buffer is full or old."""
        timestamp = int(time.time() * 1000)
        self._pending.extend(
            Metric(key=key, value=float(value), timestamp=timestamp, step=int(step))
            for key, value in metrics.items()
        )
        if (
            len(self._pending) >= self._flush_points
            or self._clock() - self._last_flush >= self._flush_seconds
        ):
            self.flush()

    def flush(self) -> None:
        """Write everything queued, in chunks of at most 1000 points."""
        while self._pending:
            chunk = self._pending[:MAX_METRICS_PER_BATCH]
            self._write(chunk)
            del self._pending[: len(chunk)]
        self._last_flush = self._clock()

    def __len__(self) -> int:
        return len(self._pending)
