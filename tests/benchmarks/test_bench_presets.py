"""Every benchmark has a preset, and each preset runs to completion and prints its JSON line.

The light presets run here (about a minute on 2 cores, inside ``make test``); the heavy ones
(``Preset.heavy``: CRSP steps, evolve searches, the embedded project's stages) run with
``-m slow`` and in ``make bench``.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))

from bench_all import run_one, unlisted  # noqa: E402
from presets import BENCH_STAGES, PRESETS, expand  # noqa: E402

LIGHT = sorted(n for n, p in PRESETS.items() if not p.heavy)
HEAVY = sorted(n for n, p in PRESETS.items() if p.heavy)


def test_every_benchmark_script_has_a_preset():
    assert unlisted() == []
    assert all((REPO / "benchmarks" / name).is_file() for name in PRESETS)


def test_a_failing_benchmark_is_reported_with_its_exit_status():
    line, why = run_one("grader_agreement.py", ["--rel-tol", "oops"], timeout_s=120)
    assert line is None and "exit 2" in why


def _check(name, model, scratch, project):
    preset = PRESETS[name]
    for module in preset.needs:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{name} needs {module}: pip install -e '.[bench]' (make bench does)")
    args = expand(preset.fast, model=str(model), scratch=str(scratch), project=str(project))
    line, why = run_one(name, args, timeout_s=600)
    assert line is not None, f"{name} {' '.join(args)}: {why}"
    return line


@pytest.mark.parametrize("name", LIGHT)
def test_light_preset_runs_to_completion(name, tiny_model_dir, tmp_path):
    line = _check(name, tiny_model_dir, tmp_path, tmp_path / "project")
    assert line.get("benchmark") or line.get("arms")  # every benchmark names itself


@pytest.fixture(scope="session")
def bench_project(tmp_path_factory):
    from proposers import embedded_default

    return embedded_default(tmp_path_factory.mktemp("bench_project"), list(BENCH_STAGES))


@pytest.mark.slow
@pytest.mark.parametrize("name", HEAVY)
def test_heavy_preset_runs_to_completion(name, bench_project, tmp_path):
    _check(name, bench_project / "models/base", tmp_path, bench_project)
