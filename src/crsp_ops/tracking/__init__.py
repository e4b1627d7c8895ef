"""Experiment tracking: jobs log through a Tracker; only drivers open runs."""

from crsp_ops.tracking.runs import disable_telemetry, experiment_name, start_run, tracking_uri
from crsp_ops.tracking.tracker import MlflowTracker, NullTracker, Tracker

__all__ = [
    "MlflowTracker",
    "NullTracker",
    "Tracker",
    "disable_telemetry",
    "experiment_name",
    "start_run",
    "tracking_uri",
]
