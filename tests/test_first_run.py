"""A new user's first run: the rough edges issue 43 found, each checked at its cause."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
import yaml

from crsp_ops.cli.main import main

ROOT = Path(__file__).resolve().parents[1]


def test_outside_a_project_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CRSP_OPS_ROOT", raising=False)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    assert main(["config", "show"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1
    assert "Kconfig" in lines[0] and "CRSP_OPS_ROOT" in lines[0] and str(tmp_path) in lines[0]


def test_license_is_an_spdx_string():
    """The TOML-table form is deprecated by setuptools (builds stop on 2027-02-18)."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert isinstance(pyproject["project"]["license"], str)
    assert re.fullmatch(r"[A-Za-z0-9.+-]+( (AND|OR|WITH) [A-Za-z0-9.+-]+)*",
                        pyproject["project"]["license"])
    assert not any(c.startswith("License ::") for c in pyproject["project"].get("classifiers", []))


def _stage_paths(stage: dict) -> list[str]:
    paths = []
    for key in ("outs", "metrics", "plots"):
        for entry in stage.get(key, []):
            paths.append(next(iter(entry)) if isinstance(entry, dict) else entry)
    return paths


def test_every_stage_output_is_git_ignored():
    """What `make demo` writes stays out of `git status`: only dvc.lock changes (README)."""
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    stages = yaml.safe_load((ROOT / "dvc.yaml").read_text())["stages"]
    paths = sorted({p for stage in stages.values() for p in _stage_paths(stage)})
    assert paths
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT,
                             capture_output=True, text=True, check=False).stdout.split()
    assert sorted(ignored) == paths
