"""One process of the idle-rank DDP check (``test_policy_update_ranks.py`` runs it).

Rank 0 updates the tiny policy on three fixed rollouts; every other rank has none and passes
``batch=None``. Run under ``torchrun --nproc_per_node 2`` (gloo on CPU) or as one plain process
on the same rollouts; each rank writes ``<out>/rank<k>.json`` with the parameter sums before and
after the update and the update's metrics. With ``--sharded`` the policy is FSDP2-sharded
(``crsp.sharding``) and updated in ``lockstep`` with one row per micro-batch: rank 0 runs three
micro-batches, rank 1 three idle passes; the sums are of the gathered full weights. With
``--shared-prompt`` the three rollouts answer one prompt, so rank 0 encodes it once per
micro-batch (``shared_prefix``; ``shared`` in the record says whether it did).

    python tests/crsp/idle_rank_update.py MODEL_DIR OUT_DIR [--sharded] [--shared-prompt]
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from accelerate import Accelerator
from transformers import AutoModelForCausalLM

from crsp_ops.crsp.policy.rank_metrics import parameter_sum
from crsp_ops.crsp.policy.sharding import shard_policy
from crsp_ops.crsp.rl.algorithms import get_algorithm
from crsp_ops.crsp.rl.shared_prefix import prompt_keys
from crsp_ops.crsp.rl.update import UpdateOptions, policy_update
from crsp_ops.inference.rollouts import Rollout, TrainingBatch

OPTIONS = UpdateOptions(
    algorithm=get_algorithm("trrpg"), betas={"solve": 0.0}, log_ratio_clamp=20.0,
    ratio_clip=None, advantage_eps=1e-6, micro_batch_size=2, update_epochs=2,
    max_grad_norm=1.0)


def rollouts(shared_prompt: bool = False) -> list[Rollout]:
    """Three solve rollouts of one math task with different rewards (non-zero advantages)."""
    rng = np.random.default_rng(0)
    prompt = rng.integers(3, 40, 5)
    rows = []
    for index, reward in enumerate((0.0, 1.0, 0.5)):
        length = 4 + index
        rows.append(Rollout(
            env_name="math", env_example_id=str(index),
            prompt_tokens=prompt if shared_prompt else rng.integers(3, 40, 5),
            response_tokens=rng.integers(3, 40, length),
            response_logprobs=np.full(length, -3.0), token_rewards=np.zeros(length),
            episode_reward=reward, logprob_semantics="raw"))
    return rows


def main(model_dir: str, out_dir: str, sharded: bool = False,
         shared_prompt: bool = False) -> None:
    """Update once (two epochs) and write this rank's record."""
    torch.manual_seed(0)
    accelerator = Accelerator(cpu=True)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    options = OPTIONS
    if sharded:
        model = shard_policy(model, accelerator.device)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        options = replace(OPTIONS, lockstep=True, micro_batch_size=1)

        def total() -> float:  # parameters(): a tied weight once, as parameter_sum counts it
            return float(sum(p.full_tensor().double().sum() for p in model.parameters()))
    else:
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
        model, optimizer = accelerator.prepare(model, optimizer)

        def total() -> float:
            return parameter_sum(accelerator.unwrap_model(model))
    rank = accelerator.process_index
    rows = rollouts(shared_prompt) if rank == 0 else []
    batch = TrainingBatch.from_rollouts(rows, pad_token_id=0) if rows else None
    shared = batch is not None and prompt_keys(model, batch, lockstep=options.lockstep) \
        is not None and shared_prompt
    before = total()
    model.train()
    metrics = policy_update(model, optimizer, accelerator, batch, ["solve"] * len(rows),
                            ["math"] * len(rows), options, temperature=1.0)
    record = {"rank": rank, "world": accelerator.num_processes, "before": before,
              "after": total(), "metrics": metrics, "shared": shared}
    Path(out_dir, f"rank{rank}.json").write_text(json.dumps(record))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sharded="--sharded" in sys.argv[3:],
         shared_prompt="--shared-prompt" in sys.argv[3:])
