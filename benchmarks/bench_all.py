"""Run every benchmark's preset in turn (``make bench``: fast, ``make bench-long``: long).

Builds the embedded defaults' stages once (``presets.BENCH_STAGES``), runs
``python -m benchmarks.<tool> [mode] <preset args>`` from the repository root for each entry of
``presets.PRESETS`` (``--only`` picks some), prints each benchmark's JSON line on stdout, and
stops at the first failure: its stderr tail on stderr, exit 1. A tool in ``benchmarks/`` (or a
mode of one) that is neither a preset nor a known library module is a failure too, so none is
forgotten (one-off studies live in ``lab/studies/``, which is not scanned). Last, on stderr, a
summary: one line per benchmark run (name, seconds, ok or FAILED) and the total time.

    python -m benchmarks.bench_all [--long] [--only tracking_overhead learning.curve ...] [--light]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.presets import BENCH_STAGES, NOT_BENCHMARKS, PRESETS, command, expand, tool_modes
from benchmarks.proposers import embedded_default

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
BUILD = "(bench project)"  # the summary's row for building the presets' project


def tools() -> list[str]:
    """Every benchmark in ``benchmarks/``: each module's name, each tool package's modes."""
    modules = [p.stem for p in HERE.glob("*.py") if p.stem not in NOT_BENCHMARKS]
    packages = [f"{p.parent.name}.{mode}" for p in HERE.glob("*/__main__.py")
                for mode in tool_modes(p.parent.name)]
    return sorted(modules + packages)


def unlisted() -> list[str]:
    """Benchmarks in ``benchmarks/`` with no preset (and not a library module)."""
    return [name for name in tools() if name not in PRESETS]


def json_line(stdout: str) -> dict | None:
    """The last stdout line that is a JSON object (every benchmark prints one last)."""
    for line in reversed(stdout.strip().splitlines()):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def run_one(name: str, args: list[str], *, timeout_s: float) -> tuple[dict | None, str]:
    """Run one benchmark; ``(its JSON line or None on failure, why it failed)``."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    try:
        done = subprocess.run([*command(name), *args], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return None, f"timed out after {timeout_s:.0f} s"
    if done.returncode != 0:
        return None, f"exit {done.returncode}:\n{done.stderr[-3000:]}"
    line = json_line(done.stdout)
    if line is None:
        return None, f"printed no JSON line:\n{done.stdout[-2000:]}"
    return line, ""


def summary(rows: list[tuple[str, float, bool]], total_s: float, not_run: int) -> str:
    """One line per benchmark run (name, seconds, ok or FAILED), then the total.

    >>> print(summary([("a", 1.24, True), ("b.mode", 30.0, False)], 40.0, 2))
    a         1 s  ok
    b.mode   30 s  FAILED
    total 40 s: 1 ok, 1 failed, 2 not run
    """
    width = max((len(name) for name, _, _ in rows), default=0)
    lines = [f"{name:<{width}} {seconds:>4.0f} s  {'ok' if ok else 'FAILED'}"
             for name, seconds, ok in rows]
    failed = sum(not ok for _, _, ok in rows)
    lines.append(f"total {total_s:.0f} s: {len(rows) - failed} ok, {failed} failed"
                 + (f", {not_run} not run" if not_run else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--long", action="store_true", help="the long presets (hours)")
    parser.add_argument("--only", nargs="+", default=None,
                        help="these benchmarks only (names as in presets.py: tool or tool.mode)")
    parser.add_argument("--light", action="store_true", help="skip the heavy presets")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per benchmark")
    args = parser.parse_args(argv)
    missing = unlisted() if args.only is None else []
    if missing:
        print(f"benchmarks without a preset in benchmarks/presets.py: {missing}", file=sys.stderr)
        return 1
    unknown = sorted(set(args.only or []) - set(PRESETS))
    if unknown:
        print(f"--only: no such benchmark {unknown}; choose from {sorted(PRESETS)}",
              file=sys.stderr)
        return 2
    names = [n for n in PRESETS if (args.only is None or n in args.only)
             and not (args.light and PRESETS[n].heavy)]
    started = time.perf_counter()
    rows: list[tuple[str, float, bool]] = []
    try:
        return run_all(names, long=args.long, timeout_s=args.timeout, rows=rows)
    finally:  # also after a failure or an exception: what ran, and for how long
        not_run = len(set(names) - {name for name, _, _ in rows})
        print(f"# summary\n{summary(rows, time.perf_counter() - started, not_run)}",
              file=sys.stderr, flush=True)


def run_all(names: list[str], *, long: bool, timeout_s: float,
            rows: list[tuple[str, float, bool]]) -> int:
    """Run ``names`` in turn on one built project; append ``(name, seconds, ok)`` to ``rows``."""
    with tempfile.TemporaryDirectory(prefix="crsp_bench_") as tmp:
        root = Path(tmp)
        project = root / "project"
        if any("{model}" in " ".join(PRESETS[n].long if long else PRESETS[n].fast)
               or "{project}" in " ".join(PRESETS[n].long if long else PRESETS[n].fast)
               for n in names):
            started = time.perf_counter()
            rows.append((BUILD, 0.0, False))  # until it is built
            embedded_default(project, list(BENCH_STAGES))
            rows[-1] = (BUILD, time.perf_counter() - started, True)
        for name in names:
            preset = PRESETS[name]
            lacking = [m for m in preset.needs if importlib.util.find_spec(m) is None]
            if lacking:
                print(f"{name}: needs {lacking} (pip install -e '.[bench]'; make bench does)",
                      file=sys.stderr)
                rows.append((name, 0.0, False))
                return 1
            scratch = root / name
            scratch.mkdir()
            argv_ = expand(preset.long if long else preset.fast,
                           model=str(project / "models/base"), scratch=str(scratch),
                           project=str(project))
            started = time.perf_counter()
            print(f"# {name} {' '.join(argv_)}", file=sys.stderr, flush=True)
            line, why = run_one(name, argv_, timeout_s=timeout_s)
            rows.append((name, time.perf_counter() - started, line is not None))
            if line is None:
                print(f"FAILED {name} {' '.join(argv_)}: {why}", file=sys.stderr)
                return 1
            print(f"#   {rows[-1][1]:.0f} s", file=sys.stderr, flush=True)
            print(json.dumps(line), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
