"""``python -m pipelines.train`` (dvc.yaml, MLproject) is ``crsp-ops train``."""

import sys

from crsp_ops.cli.commands import train

if __name__ == "__main__":
    sys.exit(train.main())
