"""CRSP's dataset-default update against TRL's GRPO update on the same rollouts; one JSON line.

    python -m benchmarks.grpo_equivalence --model /tmp/smollm2            # json_extraction, ~2 min
    python -m benchmarks.grpo_equivalence --model M --reward synthetic    # any model, random too

TRL's ``GRPOTrainer`` (its loss defaults, ``beta=0``, fp32) takes one optimizer step on
``--prompts`` dataset rows × ``--samples`` completions it samples itself; its gradient is read
just before the optimizer step (after clipping), and its rollouts (prompt and completion ids,
each completion's reward) are kept. CRSP's ``policy_update`` then runs on exactly those
rollouts from the same initial weights, with the settings a dataset run gets
(``train.preset=auto`` plus any ``--set``) less the dataset preset's one departure from TRL
(``train.flat_group_advantage=step``: a flat group measured against the step, where TRL gives
it 0; ``zero`` here unless ``--set``), and its gradient is read the same way. Printed:
the cosine between the two gradients and their norm ratio, clipped (what the optimizers see)
and before clipping (CRSP's population standard deviation against TRL's sample one makes that
ratio sqrt(G / (G − 1)) whenever some group's rewards differ: ``expected_unclipped_ratio``).

With ``--steps K`` TRL trains K steps, sampling each step's rollouts from its current weights,
and CRSP replays them with its own AdamW (as its trainer builds it) from the same start: the
weight changes after the last step are compared too (``weights_cosine``,
``weights_norm_ratio``). This reaches what one step cannot: the optimizer's state across
steps, and steps where every prompt's samples were scored alike (``flat_steps``).

Exit 1 when the directions differ (cosine below ``1 − --tolerance``) or, with both gradients
clipped, their norms do, or (over several steps) the weight changes differ: then the dataset
defaults are not TRL's GRPO. ``--reward synthetic``
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
from dataclasses import replace
from pathlib import Path

from benchmarks.trl_grpo import grpo_config

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
                             "step), as `benchmarks.learning curve` runs it; default: all")
    parser.add_argument("--steps", type=int, default=1,
                        help="optimizer steps: TRL samples each step's rollouts, CRSP replays "
                             "them with its own AdamW; the weights after the last are compared")
    parser.add_argument("--learning-rate", type=float, default=1e-6)
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


def flat_weights(model):
    """Every trainable parameter, flattened into one float32 vector (a copy)."""
    import torch

    return torch.cat([p.detach().flatten().float().clone() for p in model.parameters()
                      if p.requires_grad])


def crsp_settings(args):
    """The settings a ``--dataset`` CRSP run gets, at this check's sizes."""
    from crsp_ops.config import load_settings

    overrides = ["tracking.enabled=n", f"train.dataset={args.dataset}",
                 f"train.tasks_per_type={args.prompts}", f"train.solver_samples={args.samples}",
                 f"train.temperature={args.temperature}",
                 f"train.max_new_tokens_solve={args.max_new_tokens}",
                 f"train.max_grad_norm={args.max_grad_norm}",
                 "train.flat_group_advantage=zero", *args.overrides]  # TRL's flat group: 0
    return load_settings(REPO, overrides).settings


def trl_steps(args, settings, model, tokenizer, rows, reward_fn) -> dict:
    """``--steps`` GRPOTrainer steps: the first clipped gradient and pre-clip norm, every
    step's rollouts and rewards, and the weights after the last step."""
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    seen: dict = {"rewards": [], "rollouts": []}

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
            seen["rollouts"].append(out)
            return out

    class Gradient(TrainerCallback):
        def on_pre_optimizer_step(self, *_, **__):
            if "gradient" not in seen:  # the first step's: a float64 copy of every weight
                seen["gradient"] = flat_gradient(model)

        def on_log(self, _args, _state, _control, logs=None, **__):
            if logs and "grad_norm" in logs:
                seen.setdefault("grad_norm", float(logs["grad_norm"]))

    sequences = args.prompts * args.samples
    with tempfile.TemporaryDirectory() as out:
        config = grpo_config(
            out, samples=args.samples, sequences=sequences, micro=args.micro_batch,
            max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=args.seed,
            learning_rate=args.learning_rate, weight_decay=settings.train.weight_decay,
            max_grad_norm=args.max_grad_norm, max_steps=args.steps,
            logging_steps=1)  # the grad_norm log after the first step
        trainer = Recording(model=model, reward_funcs=[reward], args=config,
                            processing_class=tokenizer, callbacks=[Gradient()],
                            train_dataset=Dataset.from_list(rows))
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout to the one JSON line
            trainer.train()
    seen["weights"] = flat_weights(model)
    return seen


def crsp_steps(args, settings, model, tokenizer, seen: dict) -> dict:
    """CRSP's ``policy_update`` and AdamW (as its trainer builds it) replaying TRL's rollouts
    step by step: the first clipped gradient and pre-clip norm, and the final weights."""
    import numpy as np
    import torch

    from crsp_ops.crsp.policy.accelerator import make_accelerator
    from crsp_ops.crsp.rl.advantages import baseline_group
    from crsp_ops.crsp.rl.update import policy_update
    from crsp_ops.crsp.trainer.options import SelfPlaySettings, update_options
    from crsp_ops.crsp.trainer.setup import make_optimizer
    from crsp_ops.inference.rollouts import Rollout, TrainingBatch

    options = update_options(SelfPlaySettings(settings.crsp, settings.reward, settings.train,
                                              settings.generation), on_policy=True)
    captured: dict = {}

    class Reading(torch.optim.AdamW):  # reads the first (clipped) gradient, then steps
        def step(self, closure=None):
            if "gradient" not in captured:
                captured["gradient"] = flat_gradient(model)
            return super().step(closure)

    optimizer = make_optimizer(model, replace(settings.train, learning_rate=args.learning_rate),
                               optimizer_class=Reading)  # the trainer's, reading
    sequences = args.prompts * args.samples
    model.train()
    for step, out in enumerate(seen["rollouts"]):
        rollouts = []
        for row, reward in enumerate(seen["rewards"][step * sequences:(step + 1) * sequences]):
            prompt = out["prompt_ids"][row][out["prompt_mask"][row].bool()].numpy()
            response = out["completion_ids"][row][out["completion_mask"][row].bool()].numpy()
            zeros = np.zeros(len(response))  # on policy: old log-probs = the detached new ones
            rollouts.append(Rollout("dataset", str(row // args.samples), prompt, response,
                                    zeros, zeros, reward, "raw"))
        groups = [baseline_group("dataset", row // args.samples,
                                 settings.train.advantage_baseline)
                  for row in range(len(rollouts))]  # TRL's rows: each prompt's G in turn
        batch = TrainingBatch.from_rollouts(rollouts, pad_token_id=tokenizer.pad_token_id)
        metrics = policy_update(model, optimizer, make_accelerator("no", "cpu"), batch,
                                ["solve"] * len(rollouts), groups, options,
                                temperature=args.temperature)
        captured.setdefault("grad_norm", metrics.get("grad_norm"))
    return {"gradient": captured.get("gradient"), "grad_norm": captured.get("grad_norm"),
            "weights": flat_weights(model), "preset": settings.train.preset,
            "options": options, "baseline": settings.train.advantage_baseline}


def flat_steps(rewards: list[float], args) -> int:
    """Steps whose every prompt's samples were scored alike (no advantage signal)."""
    sequences = args.prompts * args.samples
    steps = [rewards[i:i + sequences] for i in range(0, len(rewards), sequences)]
    return sum(all(len(set(step[j:j + args.samples])) == 1
                   for j in range(0, sequences, args.samples)) for step in steps)


def compare_weights(start, trl: dict, crsp: dict, args) -> dict:
    """Cosine and norm ratio of the two sides' weight changes over the ``--steps``.

    Their tolerance is ten times the gradients': Adam divides each element by the root of its
    squared-gradient average, so float noise in a near-zero gradient element becomes a
    visible part of that element's change.
    """
    moved_trl, moved_crsp = trl["weights"].sub_(start), crsp["weights"].sub_(start)
    dot = trl_sq = crsp_sq = 0.0
    for a, b in zip(moved_trl.split(1 << 22), moved_crsp.split(1 << 22), strict=True):
        a, b = a.double(), b.double()  # float64 sums, a chunk at a time
        dot, trl_sq, crsp_sq = dot + float(a @ b), trl_sq + float(a @ a), crsp_sq + float(b @ b)
    cosine = dot / math.sqrt(trl_sq * crsp_sq)
    ratio = math.sqrt(crsp_sq / trl_sq)
    return {"weights_cosine": round(cosine, 7), "weights_norm_ratio": round(ratio, 5),
            "weights_agree": cosine >= 1 - 10 * args.tolerance
            and abs(ratio - 1) <= 10 * args.tolerance}


def compare(trl: dict, crsp: dict, args) -> dict:
    """Cosine and norm ratios of the two first-step gradients, and whether they agree."""
    import torch

    if crsp["gradient"] is None or not bool(trl["gradient"].any()):
        raise SystemExit("the first step's groups were all scored alike: no gradient to "
                         "compare (try --reward synthetic, more --samples or another --start)")
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
            "gradients_agree": agree}


def main(argv=None) -> int:
    args = parse_args(argv)
    settings = crsp_settings(args)
    if settings.train.mask_truncated:  # the batch below is built without the mask
        print("grpo_equivalence: train.mask_truncated is not modelled by this check; "
              "leave it off", file=sys.stderr)
        return 2
    import torch

    from crsp_ops.crsp.rewards.functions import load_reward_function
    from crsp_ops.data.prompt_dataset import load_prompt_rows
    from crsp_ops.models.loading import load_causal_lm

    torch.manual_seed(args.seed)
    reward_fn = None if args.reward == "synthetic" else load_reward_function(args.reward, REPO).fn
    rows = load_prompt_rows(args.dataset).rows[
        args.start:args.start + args.prompts * args.steps]
    model, tokenizer = load_causal_lm(args.model, dtype=torch.float32)
    initial = copy.deepcopy(model.state_dict())
    start = flat_weights(model)
    trl = trl_steps(args, settings, model, tokenizer, rows, reward_fn)
    model.load_state_dict(initial)
    crsp = crsp_steps(args, settings, model, tokenizer, trl)
    rewards = trl["rewards"]
    gradients = compare(trl, crsp, args)
    weights = compare_weights(start, trl, crsp, args)
    result = {"benchmark": "grpo_equivalence", "model": str(args.model),
              "dataset": str(args.dataset), "reward": args.reward, "prompts": args.prompts,
              "samples": args.samples, "crsp_preset": crsp["preset"],
              "crsp_loss": {"algorithm": crsp["options"].algorithm.name,
                            "loss_aggregation": crsp["options"].loss_aggregation,
                            "scale_rewards": crsp["options"].scale_rewards,
                            "advantage_baseline": crsp["baseline"]},
              "steps": args.steps, "learning_rate": args.learning_rate,
              "flat_steps": flat_steps(rewards, args),
              "reward_mean": round(sum(rewards) / len(rewards), 4),
              **gradients, **weights,
              # one step's weight change is Adam's function of the compared gradient
              "agree": gradients["gradients_agree"]
              and (args.steps == 1 or weights["weights_agree"])}
    print(json.dumps(result))
    return 0 if result["agree"] else 1


if __name__ == "__main__":
    sys.exit(main())
