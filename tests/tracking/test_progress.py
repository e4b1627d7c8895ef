"""Progress bars: drawn with an ETA in a terminal (or when forced), silent in piped output."""

from __future__ import annotations

from crsp_ops.tracking import Tracker
from crsp_ops.tracking.progress import ENV, StepProgress, progress_bar, show_progress, track


def test_piped_output_gets_no_bar(capsys, monkeypatch):
    monkeypatch.delenv(ENV, raising=False)
    assert not show_progress()  # pytest captures stdout/stderr: not terminals
    assert list(track(range(3), desc="held-out scoring")) == [0, 1, 2]
    assert capsys.readouterr().err == ""


def test_forced_bar_shows_progress_and_eta_and_resumes_where_it_was(capsys, monkeypatch):
    monkeypatch.setenv(ENV, "1")
    with progress_bar(total=8, desc="evolve", unit="iter", initial=3) as bar:
        bar.update(1)
    err = capsys.readouterr().err
    assert "evolve" in err and "4/8" in err and "<" in err  # elapsed<remaining (the ETA)
    monkeypatch.setenv(ENV, "0")
    with progress_bar(total=8, desc="quiet") as bar:
        bar.update(8)
    assert capsys.readouterr().err == ""


class Recording(Tracker):
    def __init__(self):
        self.steps = []

    def log_metrics(self, metrics, step):
        self.steps.append(step)


def test_step_progress_forwards_and_follows_the_logged_steps(monkeypatch, capsys):
    monkeypatch.setenv(ENV, "1")
    inner = Recording()
    tracker = StepProgress(inner, total=5, desc="crsp train")
    for step in (0, 1, 2, 2, 3):
        tracker.log_metrics({"loss": 1.0}, step=step)
    assert inner.steps == [0, 1, 2, 2, 3] and tracker.bar.n == 3
    tracker.close()
    assert "crsp train" in capsys.readouterr().err
