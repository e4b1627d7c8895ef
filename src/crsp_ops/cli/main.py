"""``crsp-ops``: one subcommand per DVC stage and MLflow entry point.

Every subcommand takes ``--set section.key=value`` (repeatable) to override the configuration
for one run; see ``crsp-ops config show`` for the effective values and their sources. Each
command's driver is ``crsp_ops.cli.commands.<module>`` (the module named below).

Examples:
    crsp-ops config show
    crsp-ops limo --set limo.n_synthetic=50
    crsp-ops base-model --set model.tiny_train_steps=100
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from crsp_ops.cli.commands import COMMANDS
from crsp_ops.cli.startup import guard_startup

# entry (and every driver) is imported inside the functions: the start-up guard goes first


def build_parser() -> argparse.ArgumentParser:
    """The ``crsp-ops`` argument parser with every subcommand."""
    from crsp_ops.cli.entry import help_text, stage_parser

    parser = argparse.ArgumentParser(
        prog="crsp-ops", description=help_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(module_name)
        sub = subparsers.add_parser(
            name, help=help_text(module.HELP), description=help_text(module.__doc__),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        stage_parser(module, sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crsp-ops`` console script.

    The process's own command line (``argv`` is ``None``) is guarded from here on
    (``startup.guard_startup``); the drivers' modules load after, inside this call.
    """
    if argv is None:
        guard_startup()
    from crsp_ops.cli.entry import execute

    try:
        code = execute(build_parser(), argv, "crsp-ops")
        sys.stdout.flush()  # a closed pipe shows here, not in the interpreter's last flush
        return code
    except BrokenPipeError:  # `crsp-ops config show | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE, what a shell filter reports
