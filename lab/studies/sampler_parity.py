"""Step-0 samples of CRSP's in-process sampler beside TRL's GRPOTrainer's, on the same prompts.

    OMP_NUM_THREADS=2 python -m lab.studies.sampler_parity --model /tmp/smollm2 --prompts 48

A one-off study (no preset): do the two arms of the learning suite draw from the same
distribution? Each side samples ``--samples`` completions of each of the first ``--prompts``
json_extraction train prompts from the same untrained weights (temperature 0.7, top-k and
top-p off, 48 tokens): TRL through ``GRPOTrainer._generate_and_score_completions`` (no
training step), CRSP through ``TransformersBackend.generate``. Printed: each side's mean
reward, success share, mean length and share at the budget, and CRSP − TRL mean reward per
prompt with a bootstrap interval over prompts. One JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import torch

from benchmarks.trl_grpo import grpo_config

REPO = Path(__file__).resolve().parents[2]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--prompts", type=int, default=48)
    parser.add_argument("--samples", type=int, default=8)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    from crsp_ops.crsp.rewards.functions import load_reward_function
    from crsp_ops.data.prompt_dataset import load_prompt_rows
    from crsp_ops.models.loading import load_causal_lm

    reward = load_reward_function("examples/json_extraction/reward.py:json_fields", REPO).fn
    rows = load_prompt_rows(REPO / "examples/json_extraction/train.jsonl").rows[:args.prompts]
    model, tokenizer = load_causal_lm(args.model, dtype=torch.float32)
    g = args.samples
    sides = {"trl": trl_samples(model, tokenizer, rows, reward, g),
             "crsp": crsp_samples(model, tokenizer, rows, reward, g)}
    print(json.dumps(parity(args.model, rows, g, sides)))
    return 0


def trl_samples(model, tokenizer, rows: list[dict], reward, g: int) -> tuple[list, list]:
    """TRL's step-0 samples (``_generate_and_score_completions``, no training step): their
    rewards and completion lengths, ``g`` per prompt, four prompts a batch, seed 1."""
    from datasets import Dataset
    from trl import GRPOTrainer

    seen: list[float] = []

    def scored(prompts, completions, **columns):
        values = reward(prompts, completions, **columns)
        seen.extend(values)
        return values

    torch.manual_seed(1)
    with tempfile.TemporaryDirectory() as out:
        config = grpo_config(out, samples=g, sequences=4 * g, max_new_tokens=48,
                             temperature=0.7, seed=1, max_steps=1)
        trainer = GRPOTrainer(model=model, reward_funcs=[scored], args=config,
                              processing_class=tokenizer, train_dataset=Dataset.from_list(rows))
        lengths = []
        with torch.no_grad():
            for start in range(0, len(rows), 4):
                batch = [row for row in rows[start:start + 4] for _ in range(g)]
                out_ = trainer._generate_and_score_completions(batch)
                lengths += out_["completion_mask"].sum(1).tolist()
    return seen, lengths


def crsp_samples(model, tokenizer, rows: list[dict], reward, g: int) -> tuple[list, list]:
    """CRSP's in-process samples (``TransformersBackend.generate``) of the same prompts, seed 2."""
    from crsp_ops.inference.completions import SamplingParams
    from crsp_ops.inference.transformers_backend import TransformersBackend

    backend = TransformersBackend(model, tokenizer, device="cpu", batch_size=4 * g,
                                  logprob_semantics="raw")
    params = SamplingParams(max_new_tokens=48, temperature=0.7, top_p=1.0)
    torch.manual_seed(2)
    values, lengths = [], []
    for start in range(0, len(rows), 4):
        batch = [row for row in rows[start:start + 4] for _ in range(g)]
        completions = backend.generate([row["prompt"] for row in batch], params)
        values += reward([row["prompt"] for row in batch],
                         [[{"role": "assistant", "content": c.text}] for c in completions],
                         name=[row["name"] for row in batch], city=[row["city"] for row in batch])
        lengths += [len(c.token_ids) for c in completions]
    return values, lengths


def parity(model: str, rows: list[dict], g: int, sides: dict) -> dict:
    """The JSON line: each side's reward, success, length and share at the budget, and CRSP − TRL
    mean reward per prompt with a bootstrap interval over prompts."""
    from crsp_ops.evaluation.bootstrap import bootstrap_interval

    result = {"benchmark": "sampler_parity", "model": model, "prompts": len(rows),
              "samples": g}
    for side, (rewards, lengths) in sides.items():
        rewards, lengths = np.array(rewards), np.array(lengths)
        result[side] = {"mean_reward": round(float(rewards.mean()), 4),
                        "success": round(float((rewards == 1).mean()), 4),
                        "mean_length": round(float(lengths.mean()), 2),
                        "at_budget": round(float((lengths >= 48).mean()), 3)}
    diff = (np.array(sides["crsp"][0]).reshape(-1, g).mean(1)
            - np.array(sides["trl"][0]).reshape(-1, g).mean(1))
    low, high = bootstrap_interval(diff)
    result["crsp_minus_trl_reward"] = {"diff": round(float(diff.mean()), 4),
                                       "ci95": [round(float(low), 4), round(float(high), 4)]}
    return result


if __name__ == "__main__":
    sys.exit(main())
