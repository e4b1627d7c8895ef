"""The built wheel holds crsp_ops only and works with no checkout: `crsp-ops init`, `dvc repro`,
`mlflow run`, the Python API.

The wheel is built from a copy of the sources and installed (no deps, no network) into a fresh
venv that sees this environment's packages through a plain path line. A plain line adds the
directory without processing its .pth files, so the editable install of crsp_ops there cannot
shadow the wheel.
"""

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from tests.recipes.conftest import SMALL

REPO = Path(__file__).resolve().parents[1]
# pipelines/ and tools/ beside src/, as in the checkout: the wheel must leave them out
SOURCES = ("pyproject.toml", "README.md", "src", "pipelines", "tools")
# the pipeline small: a tiny model of a few steps, two CRSP steps on two edge-math tasks
SMALL_TRAIN = SMALL + """\
CONFIG_TRAIN_STEPS=2
CONFIG_TRAIN_TASKS_PER_TYPE=2
CONFIG_TRAIN_SOLVER_SAMPLES=2
CONFIG_TRAIN_MAX_NEW_TOKENS_SOLVE=6
CONFIG_TRAIN_EVAL_MATH_TASKS=2
CONFIG_CRSP_HELDOUT_MATH=2
"""


def _run(command, cwd, env, timeout=600):
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert done.returncode == 0, f"{command}: {done.stdout[-2000:]}{done.stderr[-3000:]}"
    return done


def _built_wheel(tmp: Path) -> Path:
    source = tmp / "source"
    source.mkdir(parents=True)
    for name in SOURCES:  # a copy: the build writes build/ and *.egg-info beside the sources
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, source / name)
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
          "--no-index", "-q", "-w", str(tmp / "dist"), str(source)], tmp, os.environ.copy())
    [wheel] = (tmp / "dist").glob("crsp_ops-*.whl")
    return wheel


def _venv_with(wheel: Path, venv: Path) -> dict[str, str]:
    """A venv holding only the wheel, seeing this environment's packages; its environment."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()"
                                "['purelib'])"], capture_output=True, text=True,
                               check=True).stdout.strip())
    (site / "test_environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps",
          "--no-index", "-q", str(wheel)], venv, os.environ.copy())
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "CRSP_OPS_ROOT", "DVC_ROOT", "CRSP_OPS_KCONFIG")
           and not k.startswith("MLFLOW_")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{Path(sys.executable).parent}{os.pathsep}"
               f"{env['PATH']}", HF_HUB_OFFLINE="1", MLFLOW_DISABLE_TELEMETRY="true",
               DVC_NO_ANALYTICS="1", GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t",
               GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t", OMP_NUM_THREADS="1")
    return env


def _snippet() -> str:
    section = (REPO / "docs" / "training.md").read_text().split("## Train on your own task")[1]
    [code] = re.findall(r"```python\n(.*?)```", section.split("\n## ", 1)[0], flags=re.S)
    return code


@pytest.mark.slow
def test_the_wheel_inits_a_project_that_trains_with_dvc_and_the_api(tmp_path):
    wheel = _built_wheel(tmp_path / "build")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        entry_points = archive.read(next(n for n in names if n.endswith("entry_points.txt")))
    assert {name.split("/")[0] for name in names} == {"crsp_ops", "crsp_ops-0.1.0.dist-info"}
    assert "crsp-ops = crsp_ops.cli.main:main" in entry_points.decode()
    venv = tmp_path / "venv"
    env = _venv_with(wheel, venv)
    where = _run([venv / "bin" / "python", "-c", "import importlib.util, crsp_ops.cli.main; "
                  "print(crsp_ops.__file__); print(importlib.util.find_spec('pipelines'), "
                  "importlib.util.find_spec('tools'))"], tmp_path, env)
    crsp_ops_file, no_pipelines = where.stdout.strip().split("\n")
    assert Path(crsp_ops_file).is_relative_to(venv), where.stdout
    assert no_pipelines == "None None", where.stdout

    work = tmp_path / "work"  # empty, outside the checkout
    work.mkdir()
    _run(["crsp-ops", "init", "proj"], work, env)
    project = work / "proj"
    (project / ".config").write_text((project / ".config").read_text() + SMALL_TRAIN)
    _run(["crsp-ops", "config", "sync"], project, env)
    for command in (["git", "init", "-q"], ["dvc", "init", "-q"], ["dvc", "repro"]):
        _run(command, project, env)
    assert json.loads((project / "models/crsp.metrics.json").read_text())["steps"] == 2

    _run(["mlflow", "run", ".", "-e", "train", "--env-manager", "local", "--experiment-name",
          "crsp-train", "-P", "steps=1", "-P", "out=models/mlflow"], project, env)
    assert (project / "models/mlflow/config.json").is_file()

    shutil.copytree(REPO / "examples" / "json_extraction",
                    project / "examples" / "json_extraction")
    api = _run([venv / "bin" / "python", "-c", _snippet()], project, env)
    assert api.stdout.split()[-2] == "2"
    assert (project / "models/json-extraction/config.json").is_file()

    client = MlflowClient(f"sqlite:///{project / 'mlflow.db'}")
    runs = client.search_runs([e.experiment_id for e in client.search_experiments()])
    by_job = {}
    for run in runs:
        assert run.info.status == "FINISHED", run.data.tags
        by_job.setdefault(run.data.tags["crsp.job"], []).append(run)
    assert sorted(by_job) == ["base-model", "data", "train"]
    trains = {("dvc" if "dvc.stage" in run.data.tags else "api" if "crsp.api" in run.data.tags
               else run.data.tags["mlflow.project.entryPoint"]): run for run in by_job["train"]}
    assert sorted(trains) == ["api", "dvc", "train"]
    assert trains["api"].data.tags["model.loaded_from"] == "directory"
    for how, steps in (("dvc", "2"), ("api", "2"), ("train", "1")):
        run = trains[how]
        assert client.get_metric_history(run.info.run_id, "eval/solve_rate/all"), how
        assert run.data.params["train.steps"] == steps, how
