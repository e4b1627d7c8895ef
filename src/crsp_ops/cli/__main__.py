"""``python -m crsp_ops.cli``: ``crsp-ops`` (``accelerate launch -m crsp_ops.cli train``)."""

import sys

from crsp_ops.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
