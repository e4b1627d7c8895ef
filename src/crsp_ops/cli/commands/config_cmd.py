"""Show, check and sync the configuration.

crsp-ops config show            effective value and source of every option
crsp-ops config show --json     the same as JSON
crsp-ops config sync            write params.yaml from Kconfig + .config
crsp-ops config check           validate Kconfig, .config, params.yaml (exit 2 on error)
crsp-ops config menu            edit .config in menuconfig (a terminal), then sync
"""

from __future__ import annotations

import argparse
import json
import sys

from crsp_ops.cli.entry import stage_main

HELP = "show, check or sync the configuration (Kconfig -> .config -> params.yaml)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``config`` arguments."""
    parser.add_argument("action", choices=["show", "sync", "check", "menu"])
    parser.add_argument("--json", action="store_true", help="print `show` as JSON")


def run(args: argparse.Namespace) -> int:
    """Run one config action."""
    from crsp_ops.config import load_settings, sync_params
    from crsp_ops.paths import project_root

    root = project_root()
    if args.action in ("sync", "menu"):
        if args.overrides:
            print("config sync writes .config's values; --set applies to single runs only")
            return 2
        if args.action == "menu":
            edit_dotconfig(root)
        path = sync_params(root)
        print(f"wrote {path}")
        return 0
    resolved = load_settings(root, args.overrides)
    if args.action == "check":
        print("configuration OK")
        return 0
    flat = resolved.settings.flat()
    if args.json:
        print(json.dumps({k: {"value": v, "source": resolved.sources[k]} for k, v in flat.items()},
                         indent=2))
        return 0
    width = max(map(len, flat))
    for key, value in flat.items():
        print(f"{key:<{width}}  {value!r:<30}  [{resolved.sources[key]}]")
    return 0


def edit_dotconfig(root) -> None:
    """Run kconfiglib's menuconfig on the project's Kconfig and ``.config``."""
    import os

    import kconfiglib
    import menuconfig

    from crsp_ops.paths import point_at_packaged_kconfig

    point_at_packaged_kconfig()  # the project Kconfig sources the packaged declarations
    os.environ["KCONFIG_CONFIG"] = str(root / ".config")
    menuconfig.menuconfig(kconfiglib.Kconfig(str(root / "Kconfig")))


main = stage_main(sys.modules[__name__])
