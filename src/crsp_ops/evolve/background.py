"""One worker thread that runs jobs in submission order, off the caller's thread.

The evolution loop hands it the per-iteration plot and tracker calls, so generation of the next
minibatch does not wait for matplotlib or MLflow. A job that raises does not kill the worker:
the error is re-raised to the caller at its next ``submit`` or at ``close`` (one iteration
late, instead of silently lost).
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable

logger = logging.getLogger(__name__)

Job = Callable[[], None]


class BackgroundWorker:
    """Run ``submit``-ted jobs one at a time, in order, on a daemon thread.

    Args:
        name: the thread's name (shows in tracebacks and debuggers).
    """

    def __init__(self, name: str = "background-worker") -> None:
        self._jobs: queue.Queue[Job | None] = queue.Queue()
        self._errors: list[BaseException] = []
        self._closed = False
        self.job_seconds: list[tuple[float, float]] = []  # (wall, worker-thread CPU) per job
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> None:
        """Queue ``job``.

        Raises:
            RuntimeError: the worker was closed.
            Exception: the first error of an earlier job (raised once).
        """
        if self._closed:
            raise RuntimeError("submit() after close()")
        self._raise_pending()
        self._jobs.put(job)

    def close(self, *, last: Job | None = None, raise_errors: bool = True) -> None:
        """Run every queued job (then ``last``), stop the thread, then re-raise a job's error.

        Args:
            last: one more job to run after the queued ones (even if an earlier job failed).
            raise_errors: re-raise the first job error (pass ``False`` while unwinding from
                another exception: errors are then only logged).
        """
        if not self._closed:
            self._closed = True
            if last is not None:
                self._jobs.put(last)
            self._jobs.put(None)
            self._thread.join()
        if raise_errors:
            self._raise_pending()

    def _raise_pending(self) -> None:
        if self._errors:
            error = self._errors.pop(0)
            self._errors.clear()
            raise error

    def _work(self) -> None:
        while (job := self._jobs.get()) is not None:
            started, started_cpu = time.perf_counter(), time.thread_time()
            try:
                job()
            except Exception as error:  # noqa: BLE001 - handed back to the caller
                logger.warning("background job failed: %s", error, exc_info=True)
                self._errors.append(error)
            self.job_seconds.append(
                (time.perf_counter() - started, time.thread_time() - started_cpu))

    @property
    def busy_s(self) -> float:
        """Wall seconds spent running jobs."""
        return sum(wall for wall, _ in self.job_seconds)

    @property
    def busy_cpu_s(self) -> float:
        """CPU seconds of the worker thread while running jobs."""
        return sum(cpu for _, cpu in self.job_seconds)
