"""Progress bars with an ETA for long commands, quiet when output is not a terminal.

One place decides whether a bar is drawn: only when both stdout and stderr are terminals (a
piped or redirected run, DVC's captured logs, CI and pytest get none), unless
``CRSP_OPS_PROGRESS`` says ``1`` (always) or ``0`` (never). Bars go to stderr.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeVar

from tqdm.auto import tqdm

from crsp_ops.tracking.tracker import Tracker

T = TypeVar("T")
ENV = "CRSP_OPS_PROGRESS"


def show_progress() -> bool:
    """Whether bars are drawn (see the module docstring)."""
    forced = os.environ.get(ENV, "").strip()
    if forced in ("0", "1"):
        return forced == "1"
    return _isatty(sys.stdout) and _isatty(sys.stderr)


def progress_bar(*, total: int | None, desc: str, unit: str = "it", initial: int = 0,
                 enabled: bool = True) -> Any:
    """A tqdm bar (``update``/``set_postfix_str``/``close``; a context manager) or a silent one.

    Args:
        total: steps expected (``None``: unknown, no ETA).
        desc: what is progressing, e.g. ``"evolve"``.
        unit: the step's name.
        initial: steps already done (a resumed run), so the ETA counts only what is left.
        enabled: ``False`` hides it whatever the terminal.
    """
    return tqdm(total=total, desc=desc, unit=unit, initial=initial, file=sys.stderr,
                disable=not (enabled and show_progress()), dynamic_ncols=True)


def track(items: Iterable[T], *, desc: str, total: int | None = None, unit: str = "it",
          enabled: bool = True) -> Iterator[T]:
    """Iterate ``items`` behind a ``progress_bar``."""
    if total is None and hasattr(items, "__len__"):
        total = len(items)  # type: ignore[arg-type]
    with progress_bar(total=total, desc=desc, unit=unit, enabled=enabled) as bar:
        for item in items:
            yield item
            bar.update(1)


class StepProgress(Tracker):
    """A tracker that forwards everything to ``inner`` and moves a bar to each logged step.

    For loops that already log once per step (the CRSP trainer): the driver wraps its tracker,
    and the library needs no progress code. ``close`` ends the bar.
    """

    def __init__(self, inner: Tracker, *, total: int, desc: str, unit: str = "step",
                 enabled: bool = True) -> None:
        self.inner = inner
        self.run_id = inner.run_id
        self.bar = progress_bar(total=total, desc=desc, unit=unit, enabled=enabled)

    def log_metrics(self, metrics: Mapping[str, float], step: int) -> None:
        """Forward, and move the bar to ``step`` (never backwards)."""
        self.inner.log_metrics(metrics, step)
        if step > self.bar.n:
            self.bar.update(min(step, self.bar.total or step) - self.bar.n)

    def log_params(self, params: Mapping[str, Any]) -> None:
        """Forward."""
        self.inner.log_params(params)

    def set_tags(self, tags: Mapping[str, str]) -> None:
        """Forward."""
        self.inner.set_tags(tags)

    def log_text(self, text: str, artifact_file: str) -> None:
        """Forward."""
        self.inner.log_text(text, artifact_file)

    def log_dict(self, obj: Any, artifact_file: str) -> None:
        """Forward."""
        self.inner.log_dict(obj, artifact_file)

    def log_artifact(self, local_path: Any, artifact_path: str | None = None) -> None:
        """Forward."""
        self.inner.log_artifact(local_path, artifact_path)

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        """Forward."""
        self.inner.log_figure(figure, artifact_file)

    def log_input(self, name: str, source: str, digest: str, context: str) -> None:
        """Forward."""
        self.inner.log_input(name, source, digest, context)

    def flush(self) -> None:
        """Forward."""
        self.inner.flush()

    @contextmanager
    def child(self, run_name: str, tags: Mapping[str, str] | None = None) -> Iterator[Tracker]:
        """Forward."""
        with self.inner.child(run_name, tags) as child:
            yield child

    def close(self) -> None:
        """End the bar."""
        self.bar.close()


def _isatty(stream: Any) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):  # replaced or closed streams
        return False
