"""Every command the README and docs/ show is one the project accepts.

``crsp-ops`` lines are parsed by the real parser (subcommand and options; every ``--set``
value is checked as the run would check it), ``mlflow run -e`` names an MLproject entry point, ``make``
a Makefile target and ``dvc repro`` a dvc.yaml stage. Lines that run jobs are not executed here:
the demo and the stage tests do that.
"""

import re
import shlex
from pathlib import Path

import pytest
import yaml

from crsp_ops.cli.commands import COMMANDS
from crsp_ops.cli.entry import dotted_overrides
from crsp_ops.cli.main import build_parser
from crsp_ops.config import load_settings

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
PLACEHOLDER = re.compile(r"[A-Z]{2,}|<|\.\.\.|…|\$")  # PATH, <run id>, ..., $S: not literal


def shown_commands(text: str, program: str) -> list[str]:
    """Commands starting with ``program`` in code spans and code blocks (continuations joined)."""
    text = text.replace("\\\n", " ")
    found = re.findall(r"`(" + re.escape(program) + r" [^`]+)`", text)
    found += re.findall(r"^\s*(?:[A-Z_]+=\S+ )*(" + re.escape(program) + r" [^\n#]*)", text,
                        flags=re.M)
    return sorted({c.split(" && ")[0].split(" | ")[0].strip() for c in found})


def _cases(program: str):
    for page in PAGES:
        for command in shown_commands(page.read_text(), program):
            yield pytest.param(command, id=f"{page.name}: {command}"[:90])


@pytest.mark.parametrize("command", list(_cases("crsp-ops")))
def test_crsp_ops_command_parses(command):
    argv = shlex.split(command)[1:]
    if not argv or argv[0].startswith("-") or PLACEHOLDER.search(command):
        pytest.skip("a placeholder, not a literal command")
    if len(argv) == 1:  # prose naming a subcommand (`crsp-ops migrate` does ...)
        assert argv[0] in COMMANDS, command
        return
    args, extra = build_parser().parse_known_args(argv)
    overrides = [o for o in (args.overrides or []) if o] + dotted_overrides(extra)
    load_settings(REPO, overrides)  # raises ConfigError on an unknown key or a bad value


@pytest.mark.parametrize("command", list(_cases("mlflow run")))
def test_mlflow_run_names_an_entry_point(command):
    entry_points = yaml.safe_load((REPO / "MLproject").read_text())["entry_points"]
    argv = shlex.split(command)
    assert "-e" in argv, command
    assert argv[argv.index("-e") + 1] in entry_points, command


@pytest.mark.parametrize("command", list(_cases("make")))
def test_make_target_exists(command):
    targets = set(re.findall(r"^([a-z-]+):", (REPO / "Makefile").read_text(), flags=re.M))
    target = shlex.split(command)[1]
    if PLACEHOLDER.search(target) or "=" in target:
        pytest.skip("not a target")
    assert target in targets, command


@pytest.mark.parametrize("command", list(_cases("dvc repro")))
def test_dvc_repro_names_a_stage(command):
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    named = [a for a in shlex.split(command)[2:] if not a.startswith("-")]
    assert all(name in stages for name in named), command


def test_readme_is_a_front_door():
    readme = (REPO / "README.md").read_text()
    assert len(readme.splitlines()) <= 120
    for link in re.findall(r"\]\((docs/[^)#]+)[)#]", readme):
        if link not in ("docs/grading.md", "docs/reliability.md"):  # written by other issues
            assert (REPO / link).is_file(), link
