"""``python -m pipelines.optuna`` (dvc.yaml, MLproject) is ``crsp-ops optuna``."""

import sys

from crsp_ops.cli.commands import optuna

if __name__ == "__main__":
    sys.exit(optuna.main())
