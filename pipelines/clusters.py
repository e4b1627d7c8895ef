"""``python -m pipelines.clusters`` (dvc.yaml, MLproject) is ``crsp-ops clusters``."""

import sys

from crsp_ops.cli.commands import clusters

if __name__ == "__main__":
    sys.exit(clusters.main())
