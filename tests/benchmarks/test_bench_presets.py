"""Every benchmark has a preset, and each preset runs to completion and prints its JSON line.

The light presets run here (about a minute on 2 cores, inside ``make test``); the heavy ones
(``Preset.heavy``: CRSP steps, evolve searches, the embedded project's stages) run with
``-m slow`` and in ``make bench``. A preset sets the sizes its script reads, so a demo default
in the checkout's params.yaml cannot break ``make bench`` (``crsp.heldout_math=1000`` of 300
LIMO rows once did); ``bench_all`` ends with a summary and stops at the first failure.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from benchmarks import bench_all
from benchmarks.bench_all import run_one, summary, tools, unlisted
from benchmarks.presets import BENCH_STAGES, PRESETS, expand, tool_exists

REPO = Path(__file__).resolve().parents[2]

LIGHT = sorted(n for n, p in PRESETS.items() if not p.heavy)
HEAVY = sorted(n for n, p in PRESETS.items() if p.heavy)


def test_every_benchmark_script_has_a_preset():
    assert unlisted() == []
    assert all(tool_exists(name) for name in PRESETS)
    # one tool per experiment: the learning curve's modes and the step's modes
    assert {"learning.curve", "learning.seeds", "learning.suite", "step.time", "step.profile",
            "step.scaling", "step.memory"} <= set(tools())


def test_a_failing_benchmark_is_reported_with_its_exit_status():
    line, why = run_one("grader_agreement", ["--rel-tol", "oops"], timeout_s=120)
    assert line is None and "exit 2" in why


def test_bench_all_stops_at_the_first_failure_and_prints_its_summary(monkeypatch, capsys):
    ran = []

    def fake_run_one(script, args, *, timeout_s):
        ran.append(script)
        return (None, "exit 1") if script == "tracking_overhead" else ({"benchmark": 1}, "")

    monkeypatch.setattr(bench_all, "run_one", fake_run_one)
    assert bench_all.main(["--only", "grader_agreement", "tracking_overhead"]) == 1
    assert ran == ["tracking_overhead"]  # PRESETS order; grader_agreement never ran
    err = capsys.readouterr().err
    assert err.splitlines()[-2:] == [summary([("tracking_overhead", 0.0, False)], 0.0, 1)
                                     .splitlines()[0], "total 0 s: 0 ok, 1 failed, 1 not run"]


def test_the_summary_gives_each_benchmark_its_seconds_and_outcome_then_the_total():
    assert summary([("a.py", 1.4, True), ("long_name.py", 61.6, False)], 70.2, 0).splitlines() \
        == ["a.py            1 s  ok", "long_name.py   62 s  FAILED",
            "total 70 s: 1 ok, 1 failed"]


def _settings_overrides(args: tuple[str, ...]) -> list[str]:
    """The ``section.key=value`` settings a preset's arguments pass (``--set``, ``--stage-set``)."""
    args = tuple(expand(args, model="/m", scratch="/s", project="/p"))
    return [value for flag, value in zip(args, args[1:], strict=False)
            if flag in ("--set", "--stage-set")]


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_every_preset_sets_known_settings_with_valid_values(name):
    from crsp_ops.config import load_settings

    for args in (PRESETS[name].fast, PRESETS[name].long):
        load_settings(REPO, _settings_overrides(args), env={})  # ConfigError names the bad one


@pytest.fixture(scope="module")
def demo_moved_root(tmp_path_factory):
    """A project whose params.yaml is the checkout's (the demo's) with its sizes moved far off.

    What a demo may change next: more held-out tasks than LIMO rows, fewer rows, every
    problem type, a larger batch (values at their Kconfig limits).
    """
    import yaml

    from crsp_ops.config.params_file import read_params
    from crsp_ops.paths import copy_config_tree

    root = tmp_path_factory.mktemp("demo_moved")
    copy_config_tree(REPO, root)
    params, _ = read_params(REPO / "params.yaml")
    params["crsp"].update(heldout_math=100000, problem_types=["code_o", "code_i", "code_f", "math"])
    params["train"].update(eval_math_tasks=100000, tasks_per_type=1024)
    params["limo"].update(n_synthetic=1)
    (root / "params.yaml").write_text(yaml.safe_dump(params), encoding="utf-8")
    return root


@pytest.mark.parametrize("which", ["fast", "long"])
def test_crsp_heldout_presets_take_no_size_from_the_demo_params(which, demo_moved_root):
    """The checkout's params.yaml and one with the demo's sizes moved give the same run."""
    from benchmarks.crsp_heldout import limo_split
    from crsp_ops.config import load_settings

    args = getattr(PRESETS["crsp_heldout"], which)
    sizes = []
    for root in (REPO, demo_moved_root):
        settings = load_settings(root, ["tracking.enabled=n", *_settings_overrides(args)],
                                 env={}).settings
        train, heldout = limo_split(settings)  # ValueError: crsp.heldout_math >= the rows
        sizes.append({"train_rows": len(train), "heldout_rows": len(heldout),
                      "scored": min(len(heldout), settings.train.eval_math_tasks),
                      "problem_types": settings.crsp.problem_types,
                      "tasks_per_type": settings.train.tasks_per_type if which == "fast" else 0})
    assert sizes[0] == sizes[1]
    assert sizes[0]["train_rows"] > 0 and 0 < sizes[0]["scored"] <= 100


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
    from benchmarks.proposers import embedded_default

    return embedded_default(tmp_path_factory.mktemp("bench_project"), list(BENCH_STAGES))


@pytest.mark.slow
@pytest.mark.parametrize("name", HEAVY)
def test_heavy_preset_runs_to_completion(name, bench_project, tmp_path):
    _check(name, bench_project / "models/base", tmp_path, bench_project)
