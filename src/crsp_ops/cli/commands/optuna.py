"""The Optuna baseline: the evolve loop with the Optuna ask/tell proposer.

Same pool, minibatch size, iteration budget, scoring and MLflow layout as ``crsp-ops evolve``
(tag ``proposer=optuna``), so runs compare directly:

    crsp-ops optuna --set evolve.iterations=8
    crsp-ops optuna --resume outputs/optuna
    mlflow run . -e optuna --env-manager local --experiment-name crsp-evolve

The study lives in ``<out>/optuna.db`` unless ``optuna.storage`` names another (an RDB URL for
parallel workers, or journal:<path> on one machine). Parallel workers share a budget of
``optuna.n_trials`` trials; each gets its own ``optuna.worker`` index and ``--out``:

    crsp-ops optuna --out outputs/optuna-w1 --set optuna.storage=journal:outputs/optuna.journal \
        --set optuna.n_trials=16 --set evolve.iterations=16 --set optuna.worker=1
"""

from __future__ import annotations

import argparse
import sys

from crsp_ops.cli.commands import evolve
from crsp_ops.cli.entry import stage_main

HELP = "Optuna baseline of the delta evolution (same loop, ask/tell TPE proposer)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the evolve arguments with ``outputs/optuna`` as the default output."""
    evolve.add_arguments(parser, default_out="outputs/optuna")


def run(args: argparse.Namespace) -> int:
    """Run the evolve job with ``evolve.proposer=optuna``."""
    return evolve.run(args, forced_proposer="optuna")


main = stage_main(sys.modules[__name__])
