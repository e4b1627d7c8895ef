"""One tool, several modes: ``python -m benchmarks.<tool> <mode> [options]`` runs that mode's
``main(options)``; ``--help`` lists the modes, ``<mode> --help`` its options."""

from __future__ import annotations

import sys
from importlib import import_module


def dispatch(tool: str, modes: dict[str, tuple[str, str]], argv: list[str] | None = None) -> int:
    """Run the mode ``argv[0]`` names; ``modes`` maps a mode to ``(module, what it does)``."""
    argv = sys.argv[1:] if argv is None else list(argv)
    usage = "\n".join([f"usage: python -m {tool} {{{','.join(modes)}}} [options]", "",
                       *(f"  {mode:<8} {what}" for mode, (_, what) in modes.items())])
    if not argv or argv[0] in ("-h", "--help"):
        print(usage, file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] not in modes:
        print(f"{usage}\n\n{tool}: no mode {argv[0]!r}", file=sys.stderr)
        return 2
    sys.argv[0] = f"python -m {tool} {argv[0]}"  # argparse's prog in the mode's messages
    return import_module(modes[argv[0]][0]).main(argv[1:]) or 0
