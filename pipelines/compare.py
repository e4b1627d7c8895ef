"""``python -m pipelines.compare`` (dvc.yaml, MLproject) is ``crsp-ops compare``."""

import sys

from crsp_ops.cli.commands import compare

if __name__ == "__main__":
    sys.exit(compare.main())
