"""``python -m pipelines.seed`` (dvc.yaml, MLproject) is ``crsp-ops seed``."""

import sys

from crsp_ops.cli.commands import seed

if __name__ == "__main__":
    sys.exit(seed.main())
