import time

import pytest

from crsp_ops.evolve.background import BackgroundWorker


def test_jobs_run_in_order_and_close_runs_the_last_job():
    seen = []
    worker = BackgroundWorker("test")
    for i in range(5):
        worker.submit(lambda i=i: seen.append(i))
    worker.close(last=lambda: seen.append("last"))
    assert seen == [0, 1, 2, 3, 4, "last"]
    with pytest.raises(RuntimeError, match="after close"):
        worker.submit(lambda: None)


def test_a_failed_job_is_raised_once_at_the_next_call():
    worker = BackgroundWorker("test")
    ran = []
    worker.submit(lambda: 1 / 0)
    with pytest.raises(ZeroDivisionError):
        worker.close(last=lambda: ran.append("last"))
    assert ran == ["last"]  # the last job runs even after a failure
    worker.close()  # raised once


def test_busy_time_counts_wall_and_cpu_seconds_of_jobs():
    worker = BackgroundWorker("test")
    worker.submit(lambda: time.sleep(0.2))  # waiting: wall time, almost no CPU

    def spin() -> None:
        end = time.thread_time() + 0.1
        while time.thread_time() < end:
            pass

    worker.submit(spin)  # working: CPU time too
    worker.close()
    (sleep_wall, sleep_cpu), (spin_wall, spin_cpu) = worker.job_seconds
    assert sleep_wall >= 0.2 and sleep_cpu < 0.05
    assert spin_cpu >= 0.1 and spin_wall >= spin_cpu - 0.01
    assert worker.busy_s == sleep_wall + spin_wall
    assert worker.busy_cpu_s == sleep_cpu + spin_cpu
