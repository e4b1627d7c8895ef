"""Time ``crsp-ops migrate`` on a generated AZR-style checkout of a few hundred files.

The tree mixes Python packages that import each other, Hydra configs, launch scripts and
Markdown docs, and names published artifacts in every protected form (hub ids, cache
directories, HF/W&B/MLflow URIs, loader arguments, labels). The timed call is the CLI driver:
plan, validate, apply (through ``git mv`` in a git work tree, the real-world case) and the
second pass that proves idempotence. Prints one JSON line. Goal: a few seconds.

    python -m benchmarks.migrate_tree [--files 300] [--no-git]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from crsp_ops.cli.commands import migrate as driver

MODULE = '''\
"""AZR {package} module {index}: part of the absolute zero reasoner."""
import os

from absolute_zero_reasoner.{package}.azr_{package}_{previous} import azr_step_{previous}
from absolute_zero_reasoner.utils import azr_utils

HUB_MODEL = "andrewzh/Absolute_Zero_Reasoner-Coder-{size}b"
CACHE = os.path.expanduser(
    "~/.cache/huggingface/hub/models--andrewzh--Absolute_Zero_Reasoner-Coder-{size}b"
)
RESULTS = {{"AZR-Coder-{size}b": HUB_MODEL}}
POLICY_URI = "models:/azr-policy-{index}/1"


def azr_step_{index}(config):
    """One AZR step; the hazrat check is not ours."""
    azr_value = azr_step_{previous}(config) + azr_utils.AZR_VERSION
{body}
    return azr_value
'''
BODY_LINE = "    azr_value = azr_value * 1.0  # AZR keeps the value of step {n}\n"
CONFIG = '''\
azr:
  seed: {index}
  model_path: andrewzh/Absolute_Zero_Reasoner-Base-7b
trainer:
  project_name: azr
  experiment_name: azr_run_${{azr.seed}}
  logger: wandb://leaplab/azr-selfplay/runs/{index}
'''
SCRIPT = '''\
#!/bin/bash
# Launch AZR self-play, config {index}.
python -m absolute_zero_reasoner.main_azr_ppo --config-name=azr_{index} azr.seed={index} \\
    trainer.model_path=$HF_HOME/hub/models--andrewzh--Absolute_Zero_Reasoner-Base-7b/snapshots/main
'''
DOC = '''\
# AZR notes {index}

The Absolute Zero Reasoner proposes and solves its own tasks. See
[the trainer](../absolute_zero_reasoner/core/azr_core_0.py) and
https://huggingface.co/andrewzh/Absolute_Zero_Reasoner-Coder-7b.

| model | hub id |
| --- | --- |
| AZR-Coder-7b | andrewzh/Absolute_Zero_Reasoner-Coder-7b |
'''
PACKAGES = ("core", "rewards", "data", "trainer", "eval")


def write_tree(root: Path, files: int) -> int:
    """Write a checkout of exactly ``files`` files under ``root``; return the line count."""
    written = {
        "absolute_zero_reasoner/__init__.py": '"""Absolute Zero Reasoner."""\n',
        "absolute_zero_reasoner/utils/__init__.py": "",
        "absolute_zero_reasoner/utils/azr_utils.py": "AZR_VERSION = 1.0\n",
        "absolute_zero_reasoner/main_azr_ppo.py": "import hydra\n",
    }
    for package in PACKAGES:
        written[f"absolute_zero_reasoner/{package}/__init__.py"] = ""
    kinds = ["module"] * 6 + ["config", "script", "doc", "module"]
    index = 0
    while len(written) < files:
        kind = kinds[index % len(kinds)]
        if kind == "module":
            package = PACKAGES[index % len(PACKAGES)]
            count = sum(1 for p in written if p.startswith(f"absolute_zero_reasoner/{package}/"))
            number = count - 1  # minus __init__.py
            previous = max(number - 1, 0)
            body = "".join(BODY_LINE.format(n=n) for n in range(120))
            text = MODULE.format(package=package, index=number, previous=previous,
                                 size=3 + number % 4, body=body)
            if number == 0:
                text = text.replace(f"from absolute_zero_reasoner.{package}.azr_{package}_0 "
                                    "import azr_step_0\n", "")
                text = text.replace("azr_step_0(config)", "0.0")
            written[f"absolute_zero_reasoner/{package}/azr_{package}_{number}.py"] = text
        elif kind == "config":
            written[f"absolute_zero_reasoner/configs/azr_{index}.yaml"] = CONFIG.format(index=index)
        elif kind == "script":
            written[f"scripts/azr_{index}.sh"] = SCRIPT.format(index=index)
        else:
            written[f"docs/azr_notes_{index}.md"] = DOC.format(index=index)
        index += 1
    for relative, text in written.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return sum(text.count("\n") for text in written.values())


def git_commit(root: Path) -> None:
    git = ["git", "-C", str(root), "-c", "user.name=bench", "-c", "user.email=b@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "azr checkout"]):
        subprocess.run([*git, *args], check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--no-git", action="store_true", help="a plain directory, no git mv")
    args = parser.parse_args()
    use_git = not args.no_git and shutil.which("git") is not None
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "Absolute-Zero-Reasoner"
        lines = write_tree(root, args.files)
        if use_git:
            git_commit(root)
        report_path = Path(tmp) / "report.json"
        cli = argparse.ArgumentParser()
        driver.add_arguments(cli)
        argv = [str(root), "--report", str(report_path)] + ([] if use_git else ["--no-git"])
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = driver.run(cli.parse_args(argv))
        seconds = time.perf_counter() - start
        report = json.loads(report_path.read_text())
    summary = report["summary"]
    print(json.dumps({
        "benchmark": "migrate_tree",
        "files": summary["files_scanned"],
        "lines": lines,
        "git": use_git,
        "seconds": round(seconds, 3),
        "exit_code": code,
        "ok": report["ok"],
        "files_changed": summary["files_changed"],
        "paths_renamed": summary["paths_renamed"],
        "replacements": summary["replacements"],
        "protected_references": summary["protected_references"],
        "labels_for_review": summary["labels_for_review"],
        "second_pass_changes": report["validation"]["second_pass_changes"],
        "goal": "a few seconds for a few hundred files",
    }))


if __name__ == "__main__":
    main()
