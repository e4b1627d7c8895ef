"""``python -m pipelines.generate_processor`` (dvc.yaml) is ``crsp-ops generate-processor``."""

import sys

from crsp_ops.cli.commands import generate_processor

if __name__ == "__main__":
    sys.exit(generate_processor.main())
