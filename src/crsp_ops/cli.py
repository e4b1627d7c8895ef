"""``crsp-ops``: one subcommand per DVC stage and MLflow entry point.

Every subcommand takes ``--set section.key=value`` (repeatable) to override the configuration
for one run; see ``crsp-ops config show`` for the effective values and their sources.

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

from crsp_ops.config import ConfigError
from crsp_ops.errors import DataError
from crsp_ops.interrupts import Terminated, exit_on_signal, install_handlers
from crsp_ops.tracking.redaction import Redactor, install_log_redaction

# subcommand -> driver module (imported only when that subcommand runs)
COMMANDS: dict[str, str] = {
    "config": "crsp_ops.pipelines.config_cmd",
    "limo": "crsp_ops.pipelines.limo",
    "financebench": "crsp_ops.pipelines.financebench",
    "base-model": "crsp_ops.pipelines.base_model",
    "clusters": "crsp_ops.pipelines.clusters",
    "deltas": "crsp_ops.pipelines.deltas",
    "generate-processor": "crsp_ops.pipelines.generate_processor",
    "evolve": "crsp_ops.pipelines.evolve",
    "optuna": "crsp_ops.pipelines.optuna",
    "compare": "crsp_ops.pipelines.compare",
    "seed": "crsp_ops.pipelines.seed",
    "train": "crsp_ops.pipelines.train",
    "serve": "crsp_ops.pipelines.serve",
    "migrate": "crsp_ops.pipelines.migrate",
}

EXIT_CONFIG_ERROR = 2
EXIT_DATA_ERROR = 2
EXIT_INTERRUPTED = 130


def build_parser() -> argparse.ArgumentParser:
    """The ``crsp-ops`` argument parser with every subcommand."""
    parser = argparse.ArgumentParser(
        prog="crsp-ops", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as error:
            if error.name != module_name:
                raise
            continue  # a driver not written yet
        sub = subparsers.add_parser(
            name, help=module.HELP, description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        sub.add_argument(
            "--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
            help="override one option for this run (repeatable)",
        )
        sub.add_argument(
            "--param", dest="overrides", action="append", type=_nonempty_override,
            metavar="SECTION.KEY=VALUE",
            help="like --set, but an empty VALUE keeps the configured one (MLproject parameters)",
        )
        module.add_arguments(sub)
        sub.set_defaults(_driver=module)
    return parser


def _nonempty_override(text: str) -> str | None:
    return text if text.partition("=")[2] != "" else None


def dotted_overrides(extra: Sequence[str]) -> list[str]:
    """Turn ``--section.key value`` / ``--section.key=value`` into ``section.key=value``.

    ``mlflow run -P section.key=value`` passes undeclared parameters in that form, so every
    option can be set from the MLflow CLI.

    >>> dotted_overrides(["--limo.seed", "3", "--model.device=cpu"])
    ['limo.seed=3', 'model.device=cpu']
    """
    out, items = [], list(extra)
    while items:
        flag = items.pop(0)
        if not flag.startswith("--") or "." not in flag:
            raise SystemExit(f"crsp-ops: unrecognized argument {flag!r}")
        key, sep, value = flag[2:].partition("=")
        if not sep:
            if not items:
                raise SystemExit(f"crsp-ops: {flag} needs a value")
            value = items.pop(0)
        out.append(f"{key}={value}")
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``crsp-ops`` console script.

    SIGINT/SIGTERM are deferred while a tracking write is in progress (``crsp_ops.interrupts``);
    log messages are redacted. Run as the process's own command (``argv`` is ``None``), a
    signal during interpreter teardown exits with the code already decided.
    """
    from crsp_ops.tracking import disable_telemetry

    disable_telemetry()
    redactor = Redactor.from_env(os.environ)
    install_log_redaction(redactor)
    args, extra = build_parser().parse_known_args(argv)
    args.overrides = [o for o in args.overrides if o is not None] + dotted_overrides(extra)
    restore = install_handlers()
    code = 1
    try:
        code = _run(args, redactor)
        return code
    finally:
        if argv is None:
            exit_on_signal(code)
        else:
            restore()


def _run(args: argparse.Namespace, redactor: Redactor) -> int:
    def fail(kind: str, error: object, code: int) -> int:
        print(redactor.text(f"crsp-ops {args.command}: {kind}{error}"), file=sys.stderr)
        return code

    try:
        return int(args._driver.run(args) or 0)
    except ConfigError as error:
        return fail("configuration error: ", error, EXIT_CONFIG_ERROR)
    except DataError as error:
        return fail("data error: ", error, EXIT_DATA_ERROR)
    except (KeyboardInterrupt, Terminated):
        return fail("", "interrupted; partial results were saved", EXIT_INTERRUPTED)


if __name__ == "__main__":
    sys.exit(main())
