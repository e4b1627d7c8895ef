"""Buffer metric points and write them in batches: one store write per batch, not per value."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping

from mlflow.entities import Metric

MAX_METRICS_PER_BATCH = 1000  # MLflow's log_batch limit

logger = logging.getLogger(__name__)


class MetricBuffer:
    """Collects ``(key, value, step)`` points; flushes by count or age through ``write``.

    A write that fails with an error ``transient`` accepts (a server outage) keeps its points
    queued for the next flush instead of failing the job; an explicit ``flush()`` raises it.
    """

    def __init__(
        self,
        write: Callable[[list[Metric]], None],
        flush_points: int,
        flush_seconds: float,
        clock: Callable[[], float] = time.monotonic,
        transient: Callable[[BaseException], bool] = lambda error: False,
    ) -> None:
        self._write = write
        self._flush_points = min(flush_points, MAX_METRICS_PER_BATCH)
        self._flush_seconds = flush_seconds
        self._clock = clock
        self._transient = transient
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
            self._flush_or_defer()

    def _flush_or_defer(self) -> None:
        try:
            self.flush()
        except Exception as error:
            if not self._transient(error):
                raise
            self._last_flush = self._clock()  # retry after another flush interval
            logger.warning("metric write failed (%s: %s); %d points kept for the next flush",
                           type(error).__name__, error, len(self._pending))

    def pending(self) -> list[Metric]:
        """The points not written yet (a copy)."""
        return list(self._pending)

    def flush(self) -> None:
        """Write everything queued, in chunks of at most 1000 points."""
        while self._pending:
            chunk = self._pending[:MAX_METRICS_PER_BATCH]
            self._write(chunk)
            del self._pending[: len(chunk)]
        self._last_flush = self._clock()

    def __len__(self) -> int:
        return len(self._pending)
