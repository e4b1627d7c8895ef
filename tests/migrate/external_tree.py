"""A checkout whose evaluation code names published AZR artifacts in every form (issue 18).

Each form is written so that, unprotected, a seed rule would rewrite it (lower-case ``azr`` or
``AZR`` at an identifier boundary) or it carries the ``Absolute_Zero_Reasoner`` variant that no
seed rule names. ``FORMS`` lists, per form, the file, line, report kind and exact text the
migration must keep and list.
"""

from __future__ import annotations

from pathlib import Path

CODER_HUB_ID = "andrewzh/Absolute_Zero_Reasoner-Coder-7b"
BASE_HUB_ID = "andrewzh/Absolute_Zero_Reasoner-Base-7b"

CACHED_CONFIG = "cache/models--leaplab--azr-tiny-1b/snapshots/0123abcd/azr_config.json"

FILES = {
    "eval/run.sh": """\
#!/bin/bash
# Evaluate the AZR checkpoints straight from the local hub cache.
CODER=~/.cache/huggingface/hub/models--andrewzh--Absolute_Zero_Reasoner-Coder-3b/snapshots/*
TINY=$HF_HOME/hub/models--leaplab--azr-tiny-1b/snapshots/main
TASKS=$HF_HOME/hub/datasets--leaplab--azr-seed-tasks/snapshots/main
DEMO=$HF_HOME/hub/spaces--leaplab--azr-demo
azr_eval --model "$CODER" --tasks "$TASKS"
""",
    "eval/download.py": '''\
"""Fetch the published AZR checkpoints and starter tasks."""
from datasets import load_dataset
from huggingface_hub import snapshot_download
from transformers import AutoModelForCausalLM

CODER_DIR = snapshot_download(repo_id="azr-coder-7b")
BASE = AutoModelForCausalLM.from_pretrained("azr_base")
TASKS = load_dataset("azr_starter_tasks")
azr_local = AutoModelForCausalLM.from_pretrained("./outputs/azr_sft")
''',
    "eval/tracking.py": '''\
"""Where the AZR runs and models live in MLflow and W&B."""
import mlflow
import wandb

POLICY = mlflow.pyfunc.load_model("models:/azr-coder/3")
CHAMPION = "models:/azr-coder@champion"
RUN_POLICY = "runs:/0a1b2c3d/azr_policy"
STORED = "mlflow-artifacts:/1/0a1b2c3d/artifacts/azr_policy"
WANDB_RUN = "wandb://leaplab/azr-selfplay/runs/x1y2"
DASHBOARD = "https://wandb.ai/leaplab/azr-selfplay/runs/x1y2"
DATA = wandb.init().use_artifact("leaplab/azr-selfplay/azr_rollouts:v3")
azr_seed = 1
''',
    "eval/weights.md": """\
# AZR weights

Browse https://huggingface.co/leaplab/azr-coder-14b or huggingface.co/leaplab/azr-math-7b.
Stream hf://datasets/leaplab/azr-seed-tasks/train.parquet with the AZR loader.
""",
    "eval/leaderboard.py": f'''\
"""AZR leaderboard: published checkpoints and their scores."""

CHECKPOINTS = {{
    "AZR-Coder-7b": "{CODER_HUB_ID}",
    "AZR-Base-7b": "{BASE_HUB_ID}",
}}
SCORES = {{"AZR-Coder-7b": 55.2, "AZR-Base-7b": 50.1, "AZR-Coder-7b-rerun": 54.0}}
''',
    "eval/results.md": f"""\
# AZR results

| model | weights | pass@1 |
| --- | --- | --- |
| AZR-Coder-7b | [{CODER_HUB_ID}](https://huggingface.co/{CODER_HUB_ID}) | 55.2 |
| azr coder 7b (rerun) | local | 54.0 |
""",
    "eval/notes.md": """\
# Notes

The Absolute_Zero_Reasoner prompts are reused by AZR-Coder-7b and the azr loader.
""",
    "cache/models--leaplab--azr-tiny-1b/refs/main": "0123abcd\n",
    # A downloaded repository: its file names and bytes are the published artifact's.
    CACHED_CONFIG: '{"model_type": "azr", "architectures": ["AzrForCausalLM"]}\n',
    "eval/hub.yaml": f"""\
azr:
  repo: {CODER_HUB_ID}
hub:
  repo_id: ${{azr.repo}}
""",
}

# (path, line, kind, text): every form of a published reference, kept and listed.
FORMS = [
    ("eval/run.sh", 3, "hub cache directory",
     "models--andrewzh--Absolute_Zero_Reasoner-Coder-3b"),
    ("eval/run.sh", 4, "hub cache directory", "models--leaplab--azr-tiny-1b"),
    ("eval/run.sh", 5, "hub cache directory", "datasets--leaplab--azr-seed-tasks"),
    ("eval/run.sh", 6, "hub cache directory", "spaces--leaplab--azr-demo"),
    ("eval/download.py", 6, "repo_id argument", "azr-coder-7b"),
    ("eval/download.py", 7, "from_pretrained argument", "azr_base"),
    ("eval/download.py", 8, "load_dataset argument", "azr_starter_tasks"),
    ("eval/tracking.py", 5, "MLflow URI", "models:/azr-coder/3"),
    ("eval/tracking.py", 6, "MLflow URI", "models:/azr-coder@champion"),
    ("eval/tracking.py", 7, "MLflow URI", "runs:/0a1b2c3d/azr_policy"),
    ("eval/tracking.py", 8, "MLflow URI", "mlflow-artifacts:/1/0a1b2c3d/artifacts/azr_policy"),
    ("eval/tracking.py", 9, "W&B URI", "wandb://leaplab/azr-selfplay/runs/x1y2"),
    ("eval/tracking.py", 10, "W&B URI", "https://wandb.ai/leaplab/azr-selfplay/runs/x1y2"),
    ("eval/tracking.py", 11, "W&B URI", "leaplab/azr-selfplay/azr_rollouts:v3"),
    ("eval/weights.md", 3, "Hugging Face URL", "https://huggingface.co/leaplab/azr-coder-14b"),
    ("eval/weights.md", 3, "Hugging Face URL", "huggingface.co/leaplab/azr-math-7b"),
    ("eval/weights.md", 4, "Hugging Face URL",
     "hf://datasets/leaplab/azr-seed-tasks/train.parquet"),
    ("eval/hub.yaml", 2, "hub model id", CODER_HUB_ID),
    ("eval/leaderboard.py", 4, "hub model id", CODER_HUB_ID),
    ("eval/leaderboard.py", 5, "hub model id", BASE_HUB_ID),
    ("eval/results.md", 5, "hub model id", CODER_HUB_ID),
    ("eval/results.md", 5, "Hugging Face URL", f"https://huggingface.co/{CODER_HUB_ID}"),
    ("cache/models--leaplab--azr-tiny-1b", None, "hub cache directory",
     "models--leaplab--azr-tiny-1b"),
]

# (path, line, text, reference): labels naming a published artifact of the same file.
LABELS = [
    ("eval/leaderboard.py", 4, "AZR-Coder-7b", CODER_HUB_ID),
    ("eval/leaderboard.py", 5, "AZR-Base-7b", BASE_HUB_ID),
    ("eval/leaderboard.py", 7, "AZR-Coder-7b", CODER_HUB_ID),
    ("eval/leaderboard.py", 7, "AZR-Base-7b", BASE_HUB_ID),
    ("eval/results.md", 5, "AZR-Coder-7b", CODER_HUB_ID),
    ("eval/results.md", 6, "azr coder 7b", CODER_HUB_ID),
]


def write_external_tree(root: Path) -> Path:
    """Write the checkout under ``root`` and return ``root``."""
    for relative, text in FILES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
