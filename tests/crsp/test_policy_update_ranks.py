"""A rank without rollouts joins the update instead of hanging DDP (2 CPU processes, gloo).

Rank 0 has three rollouts, rank 1 none. Before the fix rank 1 skipped the backward pass and
rank 0 waited forever in DDP's gradient all-reduce; now both finish, their replicas stay
identical, and the update equals one process updating on the same rollouts (rank 0's loss is
scaled by its share of the step's tokens, so DDP's average is the one-process gradient).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.team.team_testkit import free_port

SCRIPT = Path(__file__).with_name("idle_rank_update.py")
REPO = Path(__file__).resolve().parents[2]


def _run(command: list[str], model_dir: Path, out: Path, *flags: str) -> list[dict]:
    out.mkdir()
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([*command, str(SCRIPT), str(model_dir), str(out), *flags], cwd=REPO,
                          env=env,
                          capture_output=True, text=True, timeout=300)  # a hang fails here
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(path.read_text()) for path in sorted(out.glob("rank*.json"))]


@pytest.mark.parametrize("flags", [(), ("--shared-prompt",)], ids=["own-prompts", "shared"])
def test_rank_without_rollouts_joins_the_update(tmp_path, tiny_model_dir, flags):
    # shared: rank 0's rows answer one prompt, encoded once (its forward outside DDP's wrapper)
    two = _run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                "--master_port", str(free_port())], tiny_model_dir, tmp_path / "two", *flags)
    one = _run([sys.executable], tiny_model_dir, tmp_path / "one", *flags)
    assert two[0]["shared"] is one[0]["shared"] is bool(flags)
    assert [r["world"] for r in two] == [2, 2] and one[0]["world"] == 1
    assert two[0]["after"] == two[1]["after"]  # identical replicas after the update
    assert two[0]["after"] != two[0]["before"]  # the update moved the parameters
    assert set(two[1]["metrics"]) == {"grad_norm", "update_skipped"}  # the idle rank stepped
    # rank 0's advantages count for both: neither skips the step
    assert two[0]["metrics"]["update_skipped"] == two[1]["metrics"]["update_skipped"] == 0.0
    assert two[0]["metrics"]["grad_norm"] == pytest.approx(two[1]["metrics"]["grad_norm"])
    # the same step as one process on the same rollouts
    assert two[0]["metrics"]["grad_norm"] == pytest.approx(one[0]["metrics"]["grad_norm"],
                                                           rel=1e-5)
    assert two[0]["after"] == pytest.approx(one[0]["after"], rel=1e-6, abs=1e-6)
    assert two[0]["metrics"]["loss"] == pytest.approx(one[0]["metrics"]["loss"], rel=1e-5)


def test_sharded_ranks_run_as_many_micro_batches_as_the_busiest(tmp_path, tiny_model_dir):
    """FSDP2 in lockstep: rank 0 has three one-row micro-batches, rank 1 none and runs three
    idle passes (each forward/backward is a collective); the step equals one process's."""
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                "--master_port", str(free_port())]
    two = _run(torchrun, tiny_model_dir, tmp_path / "two", "--sharded")
    one = _run([sys.executable], tiny_model_dir, tmp_path / "one")
    assert two[0]["after"] == two[1]["after"] != two[0]["before"]
    assert set(two[1]["metrics"]) == {"grad_norm", "update_skipped"}
    assert two[0]["metrics"]["grad_norm"] == pytest.approx(one[0]["metrics"]["grad_norm"],
                                                           rel=1e-4)
    assert two[0]["after"] == pytest.approx(one[0]["after"], rel=1e-6, abs=1e-5)
