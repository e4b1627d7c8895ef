"""The structure holds: layers point down, no package cycle, dvc.yaml's code deps are true."""

import ast
import json
import subprocess
import sys
from pathlib import Path

import yaml

from crsp_ops.cli.commands import COMMANDS
from tests.recipes.conftest import copy_project, recipe_env
from tools.dvc_deps import planned_deps
from tools.import_graph import (
    CRSP_LAYERS,
    LAYERS,
    build_graph,
    layer_of,
    unit_cycles,
    upward_imports,
)

REPO = Path(__file__).resolve().parents[1]


def test_every_package_sits_in_a_declared_layer():
    modules, _ = build_graph(REPO)
    unplaced = sorted(m for m in modules if m != "crsp_ops" and layer_of(m) is None)
    assert not unplaced, f"add these to tools.import_graph.LAYERS: {unplaced}"
    assert len(LAYERS) >= 5
    # the command line sits on top of the package; the stage scripts on top of it
    assert LAYERS[-2:] == (("crsp_ops.cli",), ("pipelines",))


def test_no_package_cycle_and_no_upward_import():
    _, edges = build_graph(REPO)
    assert unit_cycles(edges) == []
    climbing = [f"{i.source}:{i.line} -> {i.target}" for i in upward_imports(edges)]
    assert climbing == []
    # function-level imports are in the graph too (they run when the function runs)
    assert any(i.in_function for i in edges)


def _copy_project(root: Path, names=("src", "pipelines")) -> Path:
    return copy_project(root, names)


def test_a_planted_upward_import_is_caught(tmp_path):
    root = _copy_project(tmp_path / "tree")
    bias = root / "src/crsp_ops/steering/bias.py"
    # inside a function, as an import dodging a cycle would be written
    bias.write_text(bias.read_text() + "\n\ndef _planted():\n    from crsp_ops.evolve import loop\n")
    _, edges = build_graph(root)
    climbing = {(i.source, i.target, i.in_function) for i in upward_imports(edges)}
    assert climbing == {("crsp_ops.steering.bias", "crsp_ops.evolve", True),
                        ("crsp_ops.steering.bias", "crsp_ops.evolve.loop", True)}
    (cycle,) = unit_cycles(edges)  # steering -> evolve -> ... -> steering
    assert {"crsp_ops.evolve", "crsp_ops.steering"} <= set(cycle)


def test_dvc_yaml_code_deps_are_the_drivers_imports():
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    plan = planned_deps(REPO, stages, COMMANDS)
    assert set(plan) == set(stages), "every stage runs a script in pipelines/"
    stale = {name: sorted(set(deps) ^ set(stages[name]["deps"]))
             for name, deps in plan.items() if deps != stages[name]["deps"]}
    assert stale == {}, "run `python -m tools.dvc_deps` to regenerate dvc.yaml's code deps"
    # only what runs: the data stage does not depend on the CRSP trainer or the evolve loop
    assert "src/crsp_ops/crsp/trainer/loop.py" not in stages["limo"]["deps"]
    assert "src/crsp_ops/evolve/loop.py" not in stages["train"]["deps"]
    assert "pipelines/train.py" not in stages["seed"]["deps"]
    # through the stage script into the package's driver
    assert "src/crsp_ops/cli/commands/train.py" in stages["train"]["deps"]
    assert "src/crsp_ops/cli/commands/train.py" not in stages["seed"]["deps"]


def test_dvc_deps_check_fails_on_a_stale_dvc_yaml(tmp_path):
    root = _copy_project(tmp_path / "project", ("src", "pipelines", "tools", "Kconfig",
                                                "dvc.yaml"))
    dvc_file = root / "dvc.yaml"
    lines = dvc_file.read_text().splitlines(keepends=True)
    lines.remove(next(line for line in lines if line.strip() == "- src/crsp_ops/data/limo.py"))
    dvc_file.write_text("".join(lines))
    env = recipe_env(root)
    check = subprocess.run([sys.executable, "-m", "tools.dvc_deps", "--check"], cwd=root,
                           env=env, capture_output=True, text=True)
    assert check.returncode == 1
    assert "limo: missing ['src/crsp_ops/data/limo.py']; not run []" in check.stdout
    assert f"1 of {len(yaml.safe_load(dvc_file.read_text())['stages'])} stages out of date" \
        in check.stdout
    fixed = subprocess.run([sys.executable, "-m", "tools.dvc_deps"], cwd=root, env=env,
                           capture_output=True, text=True)
    assert fixed.returncode == 0, fixed.stderr
    assert dvc_file.read_text() == (REPO / "dvc.yaml").read_text()


def _dvc(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["dvc", *args], cwd=root, env=recipe_env(root), capture_output=True,
                          text=True, timeout=300)


def _fake_outputs(root: Path, stages: dict) -> None:
    """Stand-ins for every output (and in-output file dep), so DVC can hash a lock."""
    paths = []
    for stage in stages.values():
        for key in ("outs", "metrics", "plots"):
            paths += [next(iter(o)) if isinstance(o, dict) else o for o in stage.get(key, [])]
        paths += [d for d in stage["deps"] if not d.endswith(".py")]
    for name in paths:
        path = root / name
        if path.suffix:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(f"stand-in for {name}\n")
        else:
            path.mkdir(parents=True, exist_ok=True)
            (path / "stand_in.txt").write_text("x\n")


def _changed_deps(status: dict) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for stage, entries in status.items():
        for entry in entries:
            if isinstance(entry, dict):
                out.setdefault(stage, set()).update(entry.get("changed deps", {}))
    return out


def test_editing_a_module_flips_dvc_status_of_exactly_the_stages_that_run_it(tmp_path):
    root = _copy_project(tmp_path / "project", ("src", "pipelines", "Kconfig",
                                                "dvc.yaml", "params.yaml", ".dvcignore"))
    stages = yaml.safe_load((root / "dvc.yaml").read_text())["stages"]
    env = recipe_env(root)
    for command in (["git", "init", "-q"], ["dvc", "init", "-q"]):
        subprocess.run(command, cwd=root, env=env, check=True)
    _fake_outputs(root, stages)
    committed = _dvc(root, "commit", "-f", "-q")
    assert committed.returncode == 0, committed.stderr
    before = _dvc(root, "status", "--json")
    assert before.returncode == 0 and _changed_deps(json.loads(before.stdout)) == {}

    cases = [("src/crsp_ops/steering/embedder.py", "clusters", "limo"),
             ("src/crsp_ops/data/limo_synthetic.py", "limo", "clusters"),
             ("src/crsp_ops/crsp/rl/trrpg.py", "train", "evolve")]
    for module, runs_it, does_not in cases:
        assert module in stages[runs_it]["deps"] and module not in stages[does_not]["deps"]
        path = root / module
        path.write_text(path.read_text() + "\n# edited\n")
        changed = _changed_deps(json.loads(_dvc(root, "status", "--json").stdout))
        expected = {name for name, stage in stages.items() if module in stage["deps"]}
        assert {name for name, deps in changed.items() if module in deps} == expected
        assert runs_it in expected and does_not not in changed
        path.write_text(path.read_text().replace("\n# edited\n", ""))
    assert _changed_deps(json.loads(_dvc(root, "status", "--json").stdout)) == {}


def test_the_trainer_package_layers_point_down():
    modules, edges = build_graph(REPO)
    inner = [m for m in modules if m.startswith("crsp_ops.crsp.")]
    assert [m for m in inner if layer_of(m, CRSP_LAYERS) is None] == []
    climbing = [f"{i.source}:{i.line} -> {i.target}"
                for i in upward_imports(edges, CRSP_LAYERS, within="crsp_ops.crsp")]
    assert climbing == []
    assert unit_cycles([i for i in edges if i.source in inner and i.target in inner],
                       CRSP_LAYERS) == []


def test_a_planted_upward_import_inside_the_trainer_is_caught(tmp_path):
    root = _copy_project(tmp_path / "tree")
    losses = root / "src/crsp_ops/crsp/rl/trrpg.py"
    losses.write_text(losses.read_text() + "\n\ndef _planted():\n"
                      "    from crsp_ops.crsp.trainer import loop\n")
    _, edges = build_graph(root)
    climbing = {(i.source, i.target) for i in upward_imports(edges, CRSP_LAYERS,
                                                               within="crsp_ops.crsp")}
    assert ("crsp_ops.crsp.rl.trrpg", "crsp_ops.crsp.trainer.loop") in climbing


MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
# the package and its stage scripts, and the packages run with `python -m` beside them
SIZE_CHECKED = ("src", "pipelines", "benchmarks", "lab", "tools")


def _oversized(root: Path) -> list[str]:
    """Modules over 400 lines and functions over 60 in src/, pipelines/, benchmarks/, lab/ and
    tools/, by name."""
    found = []
    paths = [path for folder in SIZE_CHECKED for path in (root / folder).rglob("*.py")]
    for path in sorted(paths):
        text = path.read_text()
        name = path.relative_to(root)
        if len(text.splitlines()) > MAX_MODULE_LINES:
            found.append(f"{name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length > MAX_FUNCTION_LINES:
                    found.append(f"{name}:{node.lineno} {node.name}: {length} lines")
    return found


def test_no_module_or_function_is_oversized():
    assert _oversized(REPO) == [], f"split these ({', '.join(SIZE_CHECKED)}: same floor)"


def test_an_oversized_function_or_module_is_reported_in_every_checked_folder(tmp_path):
    body = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES))
    for folder in ("src/pkg", "benchmarks/step", "tools"):
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "long.py").write_text(f"def long():\n{body}")
    for folder in ("pipelines", "lab"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "stage.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    # at the floor passes: a function of 60 lines, a module of 400
    fits = "".join(f"    x{i} = {i}\n" for i in range(MAX_FUNCTION_LINES - 1))
    (tmp_path / "lab/fits.py").write_text(f"def fits():\n{fits}")
    (tmp_path / "benchmarks/fits.py").write_text("x = 1\n" * MAX_MODULE_LINES)
    (tmp_path / "tests").mkdir()  # outside the checked folders
    (tmp_path / "tests/test_long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    long_function = f"long: {MAX_FUNCTION_LINES + 1} lines"
    assert _oversized(tmp_path) == [f"benchmarks/step/long.py:1 {long_function}",
                                    f"lab/stage.py: {MAX_MODULE_LINES + 1} lines",
                                    f"pipelines/stage.py: {MAX_MODULE_LINES + 1} lines",
                                    f"src/pkg/long.py:1 {long_function}",
                                    f"tools/long.py:1 {long_function}"]


def test_the_training_loop_stays_thin():
    loop = REPO / "src/crsp_ops/crsp/trainer/loop.py"
    assert len(loop.read_text().splitlines()) <= 300, "move a hook out of trainer/loop.py"
