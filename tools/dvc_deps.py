"""Write (or check) each dvc.yaml stage's code deps: the files its driver's imports reach.

python -m tools.dvc_deps          # rewrite the code deps in dvc.yaml (comments, data deps kept)
python -m tools.dvc_deps --check  # exit 1 and list the differences when dvc.yaml is out of date

A stage's driver is the ``python -m pipelines.<stage>`` (or ``crsp-ops <command>``) of its
``cmd``, followed through that script into ``crsp_ops.cli.commands``; its code deps are every
project module that runs when the driver runs (imports inside functions included, each package
``__init__`` on the way), never a whole package. Deps that are not project source (data,
models, outputs) are kept as written, after the code.
"""

from __future__ import annotations

import argparse
import io
import shlex
import sys
from pathlib import Path

from ruamel.yaml import YAML

from crsp_ops.atomic_io import atomic_write_text
from crsp_ops.cli.commands import COMMANDS
from crsp_ops.paths import project_root
from tools.import_graph import SOURCE_ROOTS, build_graph, reachable


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``--check`` and ``--dvc-file`` arguments."""
    parser.add_argument("--check", action="store_true",
                        help="change nothing; exit 1 when a stage's code deps are out of date")
    parser.add_argument("--dvc-file", type=Path, default=None, help="default: <project>/dvc.yaml")


def driver_modules(cmd: str | list[str], commands: dict[str, str]) -> list[str]:
    """The driver modules a stage's ``cmd`` runs (``python -m X`` or ``crsp-ops SUB``).

    >>> driver_modules(["python -m pipelines.deltas --out x", "crsp-ops evolve"],
    ...                {"evolve": "crsp_ops.cli.commands.evolve"})
    ['pipelines.deltas', 'crsp_ops.cli.commands.evolve']
    """
    found = []
    for line in [cmd] if isinstance(cmd, str) else cmd:
        words = shlex.split(line)
        for i, word in enumerate(words[:-1]):
            if word == "-m" and words[i + 1].startswith("pipelines."):
                found.append(words[i + 1])
            elif Path(word).name == "crsp-ops" and words[i + 1] in commands:
                found.append(commands[words[i + 1]])
    return found


def is_code_dep(dep: str) -> bool:
    """Whether a dep is project source (generated here) rather than data (kept as written).

    >>> [is_code_dep(d) for d in ("src/crsp_ops/paths.py", "pipelines/limo.py", "data/limo")]
    [True, True, False]
    """
    code_roots = {(base / top).parts[0] for top, base in SOURCE_ROOTS.items()}
    return Path(dep).parts[:1] in {(root,) for root in code_roots}


def code_deps(root: Path, drivers: list[str], modules, edges) -> list[str]:
    """Sorted project-relative files of every module the drivers run."""
    runs: set[str] = set()
    for driver in drivers:
        runs |= reachable(driver, modules, edges)
    return sorted(modules[m].relative_to(root).as_posix() for m in runs)


def planned_deps(root: Path, stages: dict, commands: dict[str, str]) -> dict[str, list[str]]:
    """``{stage: deps}`` as they should be: generated code deps, then the stage's data deps."""
    modules, edges = build_graph(root)
    plan = {}
    for name, stage in stages.items():
        drivers = driver_modules(stage["cmd"], commands)
        if not drivers:
            continue
        data = [dep for dep in stage.get("deps", []) if not is_code_dep(str(dep))]
        plan[name] = code_deps(root, drivers, modules, edges) + [str(d) for d in data]
    return plan


def run(args: argparse.Namespace) -> int:
    """Compare each stage's deps with its imports; rewrite dvc.yaml or report (--check)."""
    root = project_root()
    dvc_file = args.dvc_file or root / "dvc.yaml"
    yaml = YAML()  # round trip: comments, order and layout survive
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    document = yaml.load(dvc_file.read_text(encoding="utf-8"))
    plan = planned_deps(root, document["stages"], COMMANDS)
    stale = {n: d for n, d in plan.items() if list(map(str, document["stages"][n]["deps"])) != d}
    if args.check:
        for name, deps in stale.items():
            now = set(map(str, document["stages"][name]["deps"]))
            print(f"{name}: missing {sorted(set(deps) - now)}; not run {sorted(now - set(deps))}")
        print(f"dvc-deps: {len(stale)} of {len(plan)} stages out of date"
              + (" (run `python -m tools.dvc_deps`)" if stale else ""))
        return 1 if stale else 0
    for name, deps in stale.items():
        document["stages"][name]["deps"] = deps
    buffer = io.StringIO()
    yaml.dump(document, buffer)
    atomic_write_text(dvc_file, buffer.getvalue())
    print(f"dvc-deps: rewrote the deps of {len(stale)} of {len(plan)} stages in {dvc_file}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """``python -m tools.dvc_deps [--check]``; returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m tools.dvc_deps", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
