"""``python -m pipelines.financebench`` (dvc.yaml, MLproject) is ``crsp-ops financebench``."""

import sys

from crsp_ops.cli.commands import financebench

if __name__ == "__main__":
    sys.exit(financebench.main())
