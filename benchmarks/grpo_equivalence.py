"""CRSP's dataset-default update against TRL's GRPO update on the same rollouts; one JSON line.

    python benchmarks/grpo_equivalence.py --model /tmp/smollm2            # json_extraction, ~2 min
    python benchmarks/grpo_equivalence.py --model M --reward synthetic    # any model, random too

TRL's ``GRPOTrainer`` (its loss defaults, ``beta=0``, fp32) takes one optimizer step on
``--prompts`` dataset rows × ``--samples`` completions it samples itself; its gradient is read
just before the optimizer step (after clipping), and its rollouts (prompt and completion ids,
each completion's reward) are kept. CRSP's ``policy_update`` then runs on exactly those
rollouts from the same initial weights, with the settings a dataset run gets
(``train.preset=auto`` plus any ``--set``), and its gradient is read the same way. Printed:
the cosine between the two gradients and their norm ratio, clipped (what the optimizers see)
and before clipping (CRSP's population standard deviation against TRL's sample one makes that
ratio sqrt(G / (G − 1)) whenever some group's rewards differ: ``expected_unclipped_ratio``).

Exit 1 when the directions differ (cosine below ``1 − --tolerance``) or, with both gradients
clipped, their norms do: then the dataset defaults are not TRL's GRPO. ``--reward synthetic``
(each completion's share of even token ids: meaningless, but it differs between samples of
any model) gives the check a signal where a task's reward would be flat.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import math
import os
import sys
import tempfile
from pathlib import Path

from trl_grpo import grpo_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", required=True, help="HF model dir (or a model_ref.json dir)")
    parser.add_argument("--dataset", default=str(REPO / "examples/json_extraction/train.jsonl"))
    parser.add_argument("--reward", default="examples/json_extraction/reward.py:json_fields",
                        help="a reward SPEC (as `crsp-ops train --reward`), or `synthetic`")
    parser.add_argument("--prompts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=8, help="completions per prompt (G)")
    parser.add_argument("--start", type=int, default=0, help="first dataset row used")
    parser.add_argument("--max-new-tokens", type=int, default=48)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-grad-norm", type=float, default=1.0, help="both sides; 0: none")
    parser.add_argument("--seed", type=int, default=0, help="TRL's sampling seed")
    parser.add_argument("--micro-batch", type=int, default=None,
                        help="TRL's rows per forward pass (gradient accumulation over the "
                             "step), as benchmarks/learning_curve.py runs it; default: all")
    parser.add_argument("--tolerance", type=float, default=1e-4)
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="a configuration override for the CRSP side (repeatable)")
    return parser.parse_args(argv)


def even_id_share(completion_ids, **_):
    """Reward for ``--reward synthetic``: each completion's share of even token ids."""
    return [sum(1 for i in ids if i % 2 == 0) / max(len(ids), 1) for ids in completion_ids]


def flat_gradient(model):
    """Every trainable parameter's gradient, flattened into one float64 vector (0 if none)."""
    import torch

    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).detach()
                      .flatten().double() for p in model.parameters() if p.requires_grad])


def crsp_settings(args):
    """The settings a ``--dataset`` CRSP run gets, at this check's sizes."""
    from crsp_ops.config import load_settings

    overrides = ["tracking.enabled=n", f"train.dataset={args.dataset}",
                 f"train.tasks_per_type={args.prompts}", f"train.solver_samples={args.samples}",
                 f"train.temperature={args.temperature}",
                 f"train.max_new_tokens_solve={args.max_new_tokens}",
                 f"train.max_grad_norm={args.max_grad_norm}", *args.overrides]
    return load_settings(REPO, overrides).settings


def trl_step(args, model, tokenizer, rows, reward_fn) -> dict:
    """One GRPOTrainer step: its clipped gradient, rollouts, rewards and pre-clip norm."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    seen: dict = {"rewards": []}

    def reward(prompts, completions, completion_ids, **columns):
        values = (even_id_share(completion_ids) if reward_fn is None
                  else reward_fn(prompts=prompts, completions=completions,
                                 completion_ids=completion_ids, **columns))
        seen["rewards"].extend(float(v) for v in values)
        return values

    reward.__name__ = "reward"

    class Recording(GRPOTrainer):
        def _generate_and_score_completions(self, inputs):
            out = super()._generate_and_score_completions(inputs)
            seen.setdefault("rollouts", out)
            return out

    class Gradient(TrainerCallback):
        def on_pre_optimizer_step(self, *_, **__):
            seen.setdefault("gradient", flat_gradient(model))

        def on_log(self, _args, _state, _control, logs=None, **__):
            if logs and "grad_norm" in logs:
                seen.setdefault("grad_norm", float(logs["grad_norm"]))

    sequences = len(rows) * args.samples
    with tempfile.TemporaryDirectory() as out:
        config = grpo_config(
            out, samples=args.samples, sequences=sequences, micro=args.micro_batch,
            max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed,
            learning_rate=1e-6, max_grad_norm=args.max_grad_norm, max_steps=1,
            logging_steps=1)  # the grad_norm log after the one step
        trainer = Recording(model=model, reward_funcs=[reward], args=config,
                            processing_class=tokenizer, callbacks=[Gradient()],
                            train_dataset=Dataset.from_list(rows))
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout to the one JSON line
            trainer.train()
    return seen


def crsp_step(args, model, tokenizer, seen: dict) -> dict:
    """CRSP's ``policy_update`` on TRL's rollouts: its clipped gradient and pre-clip norm."""
    import numpy as np

    from crsp_ops.crsp.policy.accelerator import make_accelerator
    from crsp_ops.crsp.rl.advantages import baseline_group
    from crsp_ops.crsp.rl.update import policy_update
    from crsp_ops.crsp.trainer.options import SelfPlaySettings, update_options
    from crsp_ops.inference.rollouts import Rollout, TrainingBatch

    settings = crsp_settings(args)
    options = update_options(SelfPlaySettings(settings.crsp, settings.reward, settings.train,
                                              settings.generation), on_policy=True)
    out = seen["rollouts"]
    rollouts = []
    for row, reward in enumerate(seen["rewards"]):
        prompt = out["prompt_ids"][row][out["prompt_mask"][row].bool()].numpy()
        response = out["completion_ids"][row][out["completion_mask"][row].bool()].numpy()
        zeros = np.zeros(len(response))  # on policy: old log-probs are the detached new ones
        rollouts.append(Rollout("dataset", str(row // args.samples), prompt, response, zeros,
                                zeros, reward, "raw"))
    groups = [baseline_group("dataset", row // args.samples, settings.train.advantage_baseline)
              for row in range(len(rollouts))]  # TRL's rows: each prompt's G samples in turn
    batch = TrainingBatch.from_rollouts(rollouts, pad_token_id=tokenizer.pad_token_id)
    captured: dict = {}

    class Reading:  # an optimizer whose step reads the (clipped) gradient
        param_groups = [{"lr": 0.0}]

        def zero_grad(self, set_to_none=True):
            model.zero_grad(set_to_none=set_to_none)

        def step(self):
            captured["gradient"] = flat_gradient(model)

    model.train()
    metrics = policy_update(model, Reading(), make_accelerator("no", "cpu"), batch,
                            ["solve"] * len(rollouts), groups, options,
                            temperature=args.temperature)
    return {"gradient": captured.get("gradient"), "grad_norm": metrics.get("grad_norm"),
            "preset": settings.train.preset, "options": options,
            "baseline": settings.train.advantage_baseline}


def compare(trl: dict, crsp: dict, args) -> dict:
    """Cosine and norm ratios of the two gradients, and whether they agree."""
    import torch

    if crsp["gradient"] is None:
        raise SystemExit("every group's rewards were equal: no gradient to compare "
                         "(try --reward synthetic, more --samples or another --start)")
    cosine = float(torch.nn.functional.cosine_similarity(trl["gradient"], crsp["gradient"],
                                                         dim=0))
    clipped_ratio = float(crsp["gradient"].norm() / trl["gradient"].norm())
    clip = args.max_grad_norm
    both_clipped = clip > 0 and min(trl["grad_norm"], crsp["grad_norm"]) > clip
    agree = cosine >= 1 - args.tolerance and (
        not both_clipped or abs(clipped_ratio - 1) <= 10 * args.tolerance)
    return {"cosine": round(cosine, 7), "norm_ratio_clipped": round(clipped_ratio, 5),
            "both_clipped": both_clipped, "trl_grad_norm": round(trl["grad_norm"], 5),
            "crsp_grad_norm": round(crsp["grad_norm"], 5),
            "unclipped_ratio": round(crsp["grad_norm"] / trl["grad_norm"], 5),
            "expected_unclipped_ratio": round(math.sqrt(args.samples / (args.samples - 1)), 5),
            "agree": agree}


def main(argv=None) -> int:
    args = parse_args(argv)
    if crsp_settings(args).train.mask_truncated:  # the batch below is built without the mask
        print("grpo_equivalence: train.mask_truncated is not modelled by this check; "
              "leave it off", file=sys.stderr)
        return 2
    import torch

    from crsp_ops.crsp.rewards.functions import load_reward_function
    from crsp_ops.data.prompt_dataset import load_prompt_rows
    from crsp_ops.models.loading import load_causal_lm

    torch.manual_seed(args.seed)
    reward_fn = None if args.reward == "synthetic" else load_reward_function(args.reward, REPO).fn
    rows = load_prompt_rows(args.dataset).rows[args.start:args.start + args.prompts]
    model, tokenizer = load_causal_lm(args.model, dtype=torch.float32)
    initial = copy.deepcopy(model.state_dict())
    trl = trl_step(args, model, tokenizer, rows, reward_fn)
    model.load_state_dict(initial)
    crsp = crsp_step(args, model, tokenizer, trl)
    rewards = trl["rewards"]
    result = {"benchmark": "grpo_equivalence", "model": str(args.model),
              "dataset": str(args.dataset), "reward": args.reward, "prompts": len(rows),
              "samples": args.samples, "crsp_preset": crsp["preset"],
              "crsp_loss": {"algorithm": crsp["options"].algorithm.name,
                            "loss_aggregation": crsp["options"].loss_aggregation,
                            "scale_rewards": crsp["options"].scale_rewards,
                            "advantage_baseline": crsp["baseline"]},
              "reward_mean": round(sum(rewards) / len(rewards), 4),
              **compare(trl, crsp, args)}
    print(json.dumps(result))
    return 0 if result["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
