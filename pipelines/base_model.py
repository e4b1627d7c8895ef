"""``python -m pipelines.base_model`` (dvc.yaml, MLproject) is ``crsp-ops base-model``."""

import sys

from crsp_ops.cli.commands import base_model

if __name__ == "__main__":
    sys.exit(base_model.main())
