"""A synthetic AZR-style checkout holding every hard case of issue 7, written for these tests."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

HUB_ID = "andrewzh/Absolute_Zero_Reasoner-Coder-7b"
COLLECTION_URL = "https://huggingface.co/collections/andrewzh/absolute-zero-reasoner-68139b2b"
REPO_URL = "https://github.com/LeapLabTHU/Absolute-Zero-Reasoner"
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR azr AZR \x00\xff\xfe"
LATIN1_BYTES = "Café notes on AZR\nrésumé: azr runs\n".encode("latin-1")

TEXT_FILES = {
    "absolute_zero_reasoner/__init__.py": '"""Absolute Zero Reasoner: self-play without data."""\n',
    "absolute_zero_reasoner/main_azr_ppo.py": f'''\
"""Entry point: python -m absolute_zero_reasoner.main_azr_ppo."""
import hydra

from absolute_zero_reasoner.trainer.ppo.azr_ray_trainer import AzrRayTrainer
from absolute_zero_reasoner.utils import azr_utils

from .utils.azr_utils import AZR_VERSION

HUB_MODEL = "{HUB_ID}"
COLLECTION = "{COLLECTION_URL}"


@hydra.main(config_path="configs", config_name="azr_ppo_trainer", version_base=None)
def main(config):
    """Run AZR self-play."""
    trainer = AzrRayTrainer(config.azr.seed, azr_utils.AZR_VERSION, AZR_VERSION)
    return trainer
''',
    "absolute_zero_reasoner/trainer/__init__.py": "",
    "absolute_zero_reasoner/trainer/ppo/__init__.py": "",
    "absolute_zero_reasoner/trainer/ppo/azr_ray_trainer.py": '''\
"""Ray trainer of the AZR loop (the absolute zero reasoner)."""


class AzrRayTrainer:
    """Trains AZR; the word hazrat is not an identifier of ours."""

    def __init__(self, seed, *versions):
        self.seed = seed
        self.versions = versions
''',
    "absolute_zero_reasoner/utils/__init__.py": "",
    "absolute_zero_reasoner/utils/azr_utils.py": 'AZR_VERSION = "1.0"\nAZR_HOME = "~/.azr"\n',
    "absolute_zero_reasoner/configs/azr_ppo_trainer.yaml": f'''\
azr:
  seed: 1
  problem_types: [code_i, code_o]
trainer:
  project_name: azr
  experiment_name: run_${{azr.seed}}
  model_path: {HUB_ID}
''',
    "scripts/selfplay/azr_7b.sh": f'''\
#!/bin/bash
# Self-play with the Absolute Zero Reasoner recipe.
python -m absolute_zero_reasoner.main_azr_ppo \\
    --config-name=azr_ppo_trainer \\
    azr.seed=2 \\
    azr.problem_types=[code_i] \\
    trainer.model_path={HUB_ID}
''',
    "README.md": f'''\
# Absolute Zero Reasoner

The Absolute Zero
Reasoner proposes and solves its own tasks. AZR needs no data.

![AZR overview](assets/azr.png)

Start with [the trainer](absolute_zero_reasoner/trainer/ppo/azr_ray_trainer.py) or run
`bash scripts/selfplay/azr_7b.sh`. Weights: `{HUB_ID}`; upstream code: {REPO_URL}.

Hazrat is a word that merely contains the letters.

```bibtex
@misc{{azr2025,
  title={{Absolute Zero Reasoner: Reinforced Self-play Reasoning with Zero Data}},
}}
```
''',
    "legacy/py2_azr.py": 'print "azr"\n',  # already broken before the migration
}
EXECUTABLE = "scripts/selfplay/azr_7b.sh"


def write_tree(root: Path) -> Path:
    """Write the fixture checkout under ``root`` and return ``root``."""
    for relative, text in TEXT_FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    (root / "assets").mkdir()
    (root / "assets/azr.png").write_bytes(PNG_BYTES)
    (root / "docs").mkdir()
    (root / "docs/azr_notes.txt").write_bytes(LATIN1_BYTES)
    script = root / EXECUTABLE
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return root


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (outside .git) with its bytes."""
    files = {}
    for directory, dir_names, file_names in os.walk(root):
        dir_names[:] = [name for name in dir_names if name != ".git"]
        for name in file_names:
            path = Path(directory, name)
            files[path.relative_to(root).as_posix()] = path.read_bytes()
    return files


@pytest.fixture
def azr_tree(tmp_path: Path) -> Path:
    """A fresh fixture checkout outside any git work tree."""
    return write_tree(tmp_path / "Absolute-Zero-Reasoner")
