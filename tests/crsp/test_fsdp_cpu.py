"""Sharded training on CPU: what accelerate does with an FSDP config, what torch's FSDP2 does,
and the trainer's refusal of DeepSpeed (docs/scaling.md, "Sharded training"; the trainer's own
FSDP2 is tested in test_train_sharded.py)."""

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from accelerate.utils import DistributedType

from crsp_ops.config.errors import ConfigError
from crsp_ops.crsp.policy.accelerator import require_replicated
from tests.team.team_testkit import free_port

WORKER = Path(__file__).with_name("fsdp_cpu_worker.py")
FSDP_CONFIG = """compute_environment: LOCAL_MACHINE
distributed_type: FSDP
num_processes: 2
num_machines: 1
machine_rank: 0
main_process_port: {port}
mixed_precision: 'no'
use_cpu: true
fsdp_config:
  fsdp_version: 2
  fsdp_auto_wrap_policy: TRANSFORMER_BASED_WRAP
  fsdp_transformer_layer_cls_to_wrap: LlamaDecoderLayer
  fsdp_state_dict_type: FULL_STATE_DICT
  fsdp_reshard_after_forward: true
"""


def test_deepspeed_is_refused_in_one_line_and_fsdp_is_the_trainers_own():
    with pytest.raises(ConfigError, match="DeepSpeed is not supported.*FSDP2"):
        require_replicated(SimpleNamespace(distributed_type=DistributedType.DEEPSPEED))
    for kind in (DistributedType.FSDP, DistributedType.MULTI_CPU):  # test_train_sharded.py
        require_replicated(SimpleNamespace(distributed_type=kind))


def test_fsdp_config_on_cpu_falls_back_to_ddp_while_torch_fsdp2_trains_and_gathers(tmp_path):
    config = tmp_path / "fsdp.yaml"
    config.write_text(FSDP_CONFIG.format(port=free_port()))
    done = subprocess.run([sys.executable, "-m", "accelerate.commands.launch", "--config_file",
                           str(config), str(WORKER)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = sorted((json.loads(line) for line in done.stdout.splitlines()
                   if line.startswith("{")), key=lambda row: row["rank"])
    assert [row["rank"] for row in rows] == [0, 1]
    for row in rows:
        # accelerate 1.15 promotes only accelerator device types to FSDP: on CPU the launch
        # stays plain multi-CPU (DDP); the FSDP config is ignored without an error
        assert row["accelerate_distributed_type"] == "MULTI_CPU"
        # torch's own FSDP2 shards over gloo: each rank holds about half the parameters
        assert row["local_params"] < 0.6 * row["total_params"]
        assert len(row["losses"]) == 2 and row["losses"][1] < row["losses"][0]
    # the full state dict gathers on rank 0 (every weight updated), nothing on rank 1
    assert rows[0]["gathered_keys"] == rows[0]["gathered_changed"] > 0
    assert rows[0]["gathered_shapes_match"]
    assert rows[1]["gathered_keys"] == 0
