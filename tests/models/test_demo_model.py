"""The demo's tiny model starts at the edge of the demo's tasks (issue 43).

`make demo`'s train stage can only show learning when the base model is right on part of its
held-out tasks at step 0: never right leaves nothing to reinforce, always right nothing to
learn. This builds the base model exactly as the pipeline does (params.yaml, the limo,
financebench and base_model stages) and fails when its greedy step-0 solve rate on the train
stage's held-out tasks leaves 10-60%, so a corpus change that breaks the demo is caught.
"""

from __future__ import annotations

import subprocess

import pytest

from benchmarks.demo_model_probe import solve_rate
from crsp_ops.config import load_settings
from crsp_ops.inference.transformers_backend import TransformersBackend
from tests.recipes.conftest import PROJECT_FILES, copy_project, recipe_env


@pytest.mark.slow  # ~2-3 min on 2 cores: the base model stage trains the demo's tiny model
def test_demo_model_step0_solve_rate_is_inside_10_to_60_percent(tmp_path):
    root = copy_project(tmp_path / "project", (*PROJECT_FILES, "params.yaml"))
    env = recipe_env(root)
    for stage in ("limo", "financebench", "base-model"):
        subprocess.run(["crsp-ops", stage, "--set", "tracking.enabled=false"], cwd=root,
                       env=env, check=True, capture_output=True)
    settings = load_settings(root, []).settings
    assert "math" in settings.crsp.problem_types
    assert settings.crsp.math_source == "edge" and settings.train.eval_math_tasks >= 100
    backend = TransformersBackend.from_pretrained(root / "models/base", device="cpu",
                                                  batch_size=32)
    measured = solve_rate(settings, backend, settings.train.eval_math_tasks)
    assert measured["tasks"] == settings.train.eval_math_tasks
    assert 0.10 <= measured["rate"] <= 0.60, (
        f"step-0 greedy solve rate {measured['rate']:.3f} on {measured['tasks']} tasks")
