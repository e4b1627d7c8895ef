"""``python -m pipelines.evolve`` (dvc.yaml, MLproject) is ``crsp-ops evolve``."""

import sys

from crsp_ops.cli.commands import evolve

if __name__ == "__main__":
    sys.exit(evolve.main())
