"""``python -m pipelines.deltas`` (dvc.yaml, MLproject) is ``crsp-ops deltas``."""

import sys

from crsp_ops.cli.commands import deltas

if __name__ == "__main__":
    sys.exit(deltas.main())
