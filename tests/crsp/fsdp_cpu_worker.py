"""Worker of test_fsdp_cpu: what an FSDP accelerate config gives on CPU, and torch's FSDP2 there.

Run by ``accelerate launch --config_file <FSDP config> tests/crsp/fsdp_cpu_worker.py``; prints
one JSON line per rank.
"""

import json
import sys

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import fully_shard
from transformers import LlamaConfig, LlamaForCausalLM

from crsp_ops.crsp.policy.accelerator import make_accelerator


def main() -> None:
    accelerator = make_accelerator("no", "auto")  # the trainer's; the FSDP config is in the env
    torch.manual_seed(0)
    model = LlamaForCausalLM(LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64,
                                         num_hidden_layers=2, num_attention_heads=2,
                                         num_key_value_heads=1))
    before = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    mesh = init_device_mesh("cpu", (dist.get_world_size(),))
    for layer in model.model.layers:
        fully_shard(layer, mesh=mesh)
    fully_shard(model, mesh=mesh)
    local = sum(p.to_local().numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    torch.manual_seed(1 + dist.get_rank())
    ids = torch.randint(0, 97, (2, 8))
    losses = []
    for _ in range(2):
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
    full = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True,
                                                                cpu_offload=True))
    line = json.dumps({
        "rank": dist.get_rank(), "accelerate_distributed_type": accelerator.distributed_type.value,
        "local_params": local, "total_params": sum(t.numel() for t in before.values()),
        "losses": losses, "gathered_keys": len(full),
        "gathered_changed": sum(not torch.equal(full[k], before[k]) for k in full),
        "gathered_shapes_match": all(full[k].shape == before[k].shape for k in full)})
    # one write of the whole line: both ranks share the pipe, and a write under PIPE_BUF is
    # atomic, where print's separate newline write let the two lines interleave
    sys.stdout.write(line + "\n")
    sys.stdout.flush()
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
