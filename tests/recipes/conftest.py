import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PROJECT_FILES = ("Kconfig", "MLproject", "dvc.yaml", ".dvcignore", "src", "pipelines")
# .config lines that make the data stages and the tiny base model quick
SMALL = """\
CONFIG_LIMO_N_SYNTHETIC=20
CONFIG_FINANCEBENCH_N_SYNTHETIC=40
CONFIG_FINANCEBENCH_HELDOUT_SIZE=8
CONFIG_MODEL_TINY_HIDDEN_SIZE=32
CONFIG_MODEL_TINY_INTERMEDIATE_SIZE=64
CONFIG_MODEL_TINY_LAYERS=1
CONFIG_MODEL_TINY_VOCAB_SIZE=400
CONFIG_MODEL_TINY_TRAIN_STEPS=6
CONFIG_MODEL_TINY_WARMUP_STEPS=1
CONFIG_MODEL_TINY_BATCH_SIZE=4
"""


@pytest.fixture
def project_copy(tmp_path) -> Path:
    """A fresh git + DVC project holding this repository's recipes and sources."""
    root = copy_project(tmp_path / "project", PROJECT_FILES)
    env = recipe_env(root)
    for command in (["git", "init", "-q"], ["dvc", "init", "-q"]):
        subprocess.run(command, cwd=root, env=env, check=True)
    return root


def copy_project(root: Path, names) -> Path:
    """Copy the named files and folders of this repository into a new ``root``."""
    root.mkdir(parents=True)
    for name in names:
        source = REPO / name
        if source.is_dir():
            shutil.copytree(source, root / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(source, root / name)
    return root


def recipe_env(root: Path) -> dict[str, str]:
    """The environment a user has after `source .venv/bin/activate`, offline."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "DVC_"))}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    env.update(
        CRSP_OPS_ROOT=str(root),
        MLFLOW_DISABLE_TELEMETRY="true",
        DVC_NO_ANALYTICS="1",
        HF_HUB_OFFLINE="1",
        GIT_AUTHOR_NAME="t",
        GIT_AUTHOR_EMAIL="t@t",
        GIT_COMMITTER_NAME="t",
        GIT_COMMITTER_EMAIL="t@t",
    )
    return env


def configure(root: Path, dotconfig: str) -> None:
    """Write .config and sync params.yaml, as `make menuconfig` would."""
    (root / ".config").write_text(dotconfig)
    subprocess.run(
        ["crsp-ops", "config", "sync"], cwd=root, env=recipe_env(root), check=True,
        capture_output=True,
    )
