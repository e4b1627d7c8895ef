"""``python -m benchmarks.learning <mode>``: one experiment, three modes sharing one run.

``curve`` trains the arms once (``arms.run_crsp`` / ``arms.run_grpo``); ``suite`` runs ``curve``
per task and sampling seed, then ``seeds``' summary over the runs; ``seeds`` summarizes runs
already on disk.
"""

import sys

from benchmarks.modes import dispatch

MODES = {
    "curve": ("benchmarks.learning.curve", "CRSP's arms beside TRL's GRPOTrainer on the same "
              "tasks, one run (was learning_curve.py)"),
    "seeds": ("benchmarks.learning.seeds", "gains over runs with t- and Welch intervals "
              "(was learning_curve_seeds.py)"),
    "suite": ("benchmarks.learning.suite", "CRSP beside GRPO on users' tasks over runs "
              "(was learning_suite.py)"),
}

if __name__ == "__main__":
    sys.exit(dispatch("benchmarks.learning", MODES))
