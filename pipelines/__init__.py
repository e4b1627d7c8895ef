"""The stage scripts dvc.yaml and MLproject run, ``python -m pipelines.<stage>``; not installed.

Each is ``crsp-ops <stage>``'s driver, ``crsp_ops.cli.commands.<stage>``, in a few lines.
Started as ``python -m pipelines.<stage>``, this package guards start-up before the driver's
modules load (``crsp_ops.cli.startup``).
"""

import sys

from crsp_ops.cli.startup import guard_startup

if sys.argv[:1] == ["-m"]:  # runpy is importing the package of a `python -m pipelines.<stage>`
    guard_startup()
