"""The ``crsp-ops`` command line: ``main`` (the console script), one module per command."""
