"""``python -m pipelines.convert_model`` (dvc.yaml, MLproject) is ``crsp-ops convert-model``."""

import sys

from crsp_ops.cli.commands import convert_model

if __name__ == "__main__":
    sys.exit(convert_model.main())
