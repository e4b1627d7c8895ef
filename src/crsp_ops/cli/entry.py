"""What every driver shares when it runs from a command line: arguments, errors, signals.

A driver module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``,
and ends with ``main = stage_main(sys.modules[__name__])``, so it runs as ``crsp-ops <stage>``
(``crsp_ops.cli.main``) and as the repository's ``python -m pipelines.<stage>`` (which calls that
``main``) with the same arguments and exit codes.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from types import ModuleType

from crsp_ops.config import ConfigError
from crsp_ops.dir_lock import hold_output_dir
from crsp_ops.errors import DataError, InUseError, RunFailure, TargetExistsError
from crsp_ops.interrupts import Terminated, ignore_late_signals, install_handlers
from crsp_ops.paths import working_root
from crsp_ops.tracking import disable_telemetry
from crsp_ops.tracking.redaction import Redactor, install_log_redaction

EXIT_CONFIG_ERROR = 2
EXIT_DATA_ERROR = 2
EXIT_INTERRUPTED = 130
EXIT_RUN_FAILED = 1
EXIT_IN_USE = 2
EXIT_TARGET_EXISTS = 2


def add_override_arguments(parser: argparse.ArgumentParser) -> None:
    """``--set`` and ``--param`` (the MLproject form: an empty value keeps the configured one)."""
    parser.add_argument(
        "--set", dest="overrides", action="append", default=[], metavar="SECTION.KEY=VALUE",
        help="override one option for this run (repeatable)",
    )
    parser.add_argument(
        "--param", dest="overrides", action="append", type=_nonempty_override,
        metavar="SECTION.KEY=VALUE",
        help="like --set, but an empty VALUE keeps the configured one (MLproject parameters)",
    )


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


def help_text(docstring: str | None) -> str | None:
    """A module docstring as ``--help`` shows it: RST literals (````x````) become plain ``x``.

    >>> help_text("Run ``crsp-ops evolve`` twice.")
    'Run crsp-ops evolve twice.'
    """
    return re.sub(r"``([^`]+)``", r"\1", docstring) if docstring else docstring


def stage_parser(driver: ModuleType, parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Give ``parser`` the driver's arguments and the override options."""
    add_override_arguments(parser)
    driver.add_arguments(parser)
    parser.set_defaults(_driver=driver)
    return parser


def execute(parser: argparse.ArgumentParser, argv: Sequence[str] | None, name: str) -> int:
    """Parse ``argv`` and run the chosen driver; map errors and signals to exit codes.

    Configuration and data errors print one line (exit code 2); Ctrl+C/SIGTERM print one line
    (130) and are deferred while a tracking write is in progress (``crsp_ops.interrupts``).
    Log messages and these lines are redacted. When this is the process's own command line
    (``argv`` is ``None``), signals are ignored once the driver is done, so one arriving during
    interpreter teardown cannot change the exit code.
    """
    disable_telemetry()
    redactor = Redactor.from_env(os.environ)
    install_log_redaction(redactor)
    args, extra = parser.parse_known_args(argv)
    args.overrides = [o for o in args.overrides if o is not None] + dotted_overrides(extra)
    name = getattr(args, "command", None) or name
    restore = install_handlers()
    try:
        return _run(args, name, redactor)
    except (KeyboardInterrupt, Terminated):  # in the instant between the driver's end and here
        return EXIT_INTERRUPTED
    finally:
        if argv is None:
            ignore_late_signals()
        else:
            restore()


def _run(args: argparse.Namespace, name: str, redactor: Redactor) -> int:
    def fail(message: str, code: int) -> int:
        print(redactor.text(f"crsp-ops {name}: {message}"), file=sys.stderr)
        return code

    try:
        with _output_lock(args):
            return int(args._driver.run(args) or 0)
    except ConfigError as error:
        return fail(f"configuration error: {error}", EXIT_CONFIG_ERROR)
    except DataError as error:
        return fail(f"data error: {error}", EXIT_DATA_ERROR)
    except InUseError as error:
        return fail(str(error), EXIT_IN_USE)
    except TargetExistsError as error:
        return fail(str(error), EXIT_TARGET_EXISTS)
    except RunFailure as error:  # its first line; the details went to the log and the run
        return fail(f"run failed: {str(error).splitlines()[0]}", EXIT_RUN_FAILED)
    except (KeyboardInterrupt, Terminated):
        return fail("interrupted (the log says what was kept)", EXIT_INTERRUPTED)


def _output_lock(args: argparse.Namespace):
    """Hold the directory this invocation writes: ``--resume DIR`` when given, else ``--out``.

    Every driver with an ``--out`` gets one writer at a time (``crsp_ops.dir_lock``); ``auto``
    (a fresh directory per run) needs no lock.
    """
    resume = getattr(args, "resume", None)
    target = resume if isinstance(resume, str) and resume else getattr(args, "out", None)
    if target is None or str(target) == "auto":
        return nullcontext()
    return hold_output_dir(working_root() / target)  # outside a project: the user's own path


def stage_main(driver: ModuleType) -> Callable[[Sequence[str] | None], int]:
    """The ``main(argv)`` of a driver module, for the script that runs it (pipelines/<stage>.py)."""
    module_name = driver.__spec__.name if driver.__spec__ else driver.__name__

    def main(argv: Sequence[str] | None = None) -> int:
        stage = module_name.rpartition(".")[2]
        script = getattr(sys.modules["__main__"], "__spec__", None)  # python -m <script>
        parser = argparse.ArgumentParser(
            prog=f"python -m {script.name}" if script else f"crsp-ops {stage}",
            description=help_text(driver.__doc__),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        return execute(stage_parser(driver, parser), argv, stage)

    main.__doc__ = f"Run ``{module_name}`` from a command line; returns the exit code."
    return main
