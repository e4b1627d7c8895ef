"""Create a crsp_ops project in DIR (default: the working directory), as `dvc init` does.

    crsp-ops init my-project                     # Kconfig, .config, params.yaml, dvc.yaml, ...
    crsp-ops init my-project --profile smollm2   # .config from another packaged profile
    cd my-project && git init && dvc init && dvc repro

The project's Kconfig sources the installed package's option declarations; a directory that
already holds files is refused unless --force.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from crsp_ops.cli.entry import stage_main

HELP = "create a crsp_ops project (Kconfig, .config, params.yaml, dvc.yaml, MLproject) in DIR"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``init`` arguments."""
    parser.add_argument("directory", nargs="?", default=".", type=Path, metavar="DIR",
                        help="the project directory (created when missing; default: .)")
    parser.add_argument("--profile", default="defconfig",
                        help="the packaged .config profile (crsp_ops/defaults/configs)")
    parser.add_argument("--force", action="store_true",
                        help="write into a directory that already holds files")


def run(args: argparse.Namespace) -> int:
    """Write the project files and say what to run next."""
    from crsp_ops.config.new_project import init_project

    if args.overrides:
        print("init writes the packaged defaults; choose values later in .config or with --set")
        return 2
    written = init_project(args.directory, args.profile, args.force)
    root = written[0].parent
    print(f"crsp_ops project in {root}: {', '.join(path.name for path in written)}")
    print(f"next: cd {root} && git init && dvc init && dvc repro")
    return 0


main = stage_main(sys.modules[__name__])
