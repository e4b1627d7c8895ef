"""``python -m pipelines.limo`` (dvc.yaml, MLproject) is ``crsp-ops limo``."""

import sys

from crsp_ops.cli.commands import limo

if __name__ == "__main__":
    sys.exit(limo.main())
