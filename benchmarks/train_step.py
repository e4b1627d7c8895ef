"""CRSP self-play step time and tokens/s; prints one JSON line.

    python benchmarks/train_step.py --model models/base --steps 3            # tiny model, CPU
    python benchmarks/train_step.py --model models/base --device cuda --random-init-0.5b \
        --mixed-precision bf16                                               # GPU (untested)

Each measured step is a full self-play step (propose, sandbox validation, solve, critique,
creativity grading, update) with the in-process backend; the first step is a warm-up and is
not counted. Where TRL can be imported (``pip install -e .[bench]``), TRL's ``GRPOTrainer`` is
timed in the same run on a fresh copy of the same model and tokenizer with the CRSP step's solve
batch: the median number of tasks CRSP solved per step as prompts (CRSP's own solve prompts of
the configured problem types' seed tasks), ``train.solver_samples`` generations per prompt,
``train.max_new_tokens_solve`` as max completion length, the same learning rate, temperature
and precision, a pure length reward, ``beta=0`` (no reference model), one update per batch, no
vLLM; one warm-up step, then ``--steps`` timed steps. Without TRL, ``"trl": "unavailable"``.
Comparability: a CRSP step also generates proposals and critiques and runs the sandbox, so it
does more work per step than a GRPO step on its solve batch alone (see ``rollouts_per_step``
beside ``trl_grpo_sequences_per_step``). Tokens/s counts, as CRSP does, generated plus trained
(loss-masked) tokens.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(REPO / "models" / "base"),
                        help="HF model dir (tokenizer + chat template; weights unless 0.5B)")
    parser.add_argument("--steps", type=int, default=3, help="measured steps (after a warm-up)")
    parser.add_argument("--algorithm", default="trrpg", choices=["trrpg", "trrpp"])
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda", "auto"])
    parser.add_argument("--mixed-precision", default="no", choices=["no", "fp16", "bf16"])
    parser.add_argument("--random-init-0.5b", dest="random_05b", action="store_true",
                        help="replace the weights by a random ~0.5B Llama (GPU case)")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="extra section.key=value overrides")
    return parser.parse_args(argv)


def load_policy(args):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
    if not args.random_05b:
        return AutoModelForCausalLM.from_pretrained(args.model, local_files_only=True), tokenizer
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=1024, intermediate_size=2816,
                         num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=4,
                         max_position_embeddings=4096, tie_word_embeddings=False,
                         bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
                         pad_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model, tokenizer


TRL_UNAVAILABLE = {"trl": "unavailable", "trl_grpo_step_s": None, "trl_grpo_tokens_per_s": None,
                   "crsp_over_trl_step_time_ratio": None}


def solve_prompts(problem_types, count: int) -> list[list[dict]]:
    """``count`` CRSP solve conversations, cycling over the seed tasks of ``problem_types``."""
    from crsp_ops.crsp.tasks import seed_tasks, solve_messages
    from crsp_ops.crsp.tasks.records import TaskType

    tasks = [task for name in problem_types for task in seed_tasks(TaskType(name))]
    return [solve_messages(tasks[i % len(tasks)]) for i in range(count)]


def trl_comparison(args, settings, prompts_per_step: int) -> dict:
    """Time TRL's GRPOTrainer on the CRSP solve batch (see the module docstring)."""
    try:
        import trl
        from trl import GRPOConfig, GRPOTrainer
    except ImportError:
        return dict(TRL_UNAVAILABLE)
    import contextlib
    import time

    from datasets import Dataset
    from transformers import TrainerCallback

    train = settings.train
    generations = train.solver_samples
    max_len = train.max_new_tokens_solve
    step_tokens: list[int] = []  # generated completion tokens, one entry per step

    def length_reward(completions, completion_ids, **_):
        step_tokens.append(sum(len(ids) for ids in completion_ids))
        return [len(ids) / max_len for ids in completion_ids]

    class StepClock(TrainerCallback):
        def __init__(self):
            self.marks: list[float] = []

        def on_train_begin(self, *_, **__):
            self.marks.append(time.perf_counter())

        def on_step_end(self, *_, **__):
            self.marks.append(time.perf_counter())

    total_steps = args.steps + 1
    rows = solve_prompts(settings.crsp.problem_types, prompts_per_step) * total_steps
    model, tokenizer = load_policy(args)
    clock = StepClock()
    with tempfile.TemporaryDirectory() as out:
        config = GRPOConfig(
            output_dir=out, report_to="none", use_vllm=False, use_cpu=args.device == "cpu",
            bf16=args.mixed_precision == "bf16", fp16=args.mixed_precision == "fp16",
            per_device_train_batch_size=prompts_per_step * generations,
            gradient_accumulation_steps=1, steps_per_generation=1, num_iterations=1,
            num_generations=generations, max_completion_length=max_len,
            temperature=train.temperature, beta=0.0, learning_rate=train.learning_rate,
            weight_decay=train.weight_decay, max_grad_norm=train.max_grad_norm,
            lr_scheduler_type="constant", warmup_steps=0, max_steps=total_steps,
            gradient_checkpointing=False, shuffle_dataset=False, save_strategy="no",
            logging_steps=10**6, disable_tqdm=True, log_completions=False,
            seed=settings.crsp.seed, dataloader_num_workers=0)
        trainer = GRPOTrainer(
            model=model, reward_funcs=length_reward, args=config, processing_class=tokenizer,
            train_dataset=Dataset.from_list([{"prompt": p} for p in rows]), callbacks=[clock])
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout to the one JSON line
            trainer.train()
    durations = [b - a for a, b in zip(clock.marks, clock.marks[1:], strict=False)]
    measured = list(zip(durations, step_tokens, strict=False))[1:]
    if not measured:
        return {**TRL_UNAVAILABLE, "trl": trl.__version__, "trl_error": "no step measured"}
    step_s = statistics.median(d for d, _ in measured)
    # like CRSP's tokens/s: generated tokens + trained (loss-masked completion) tokens
    tokens_per_s = statistics.median(2 * tokens / d for d, tokens in measured)
    return {"trl": trl.__version__, "trl_grpo_step_s": round(step_s, 4),
            "trl_grpo_tokens_per_s": round(tokens_per_s, 2),
            "trl_grpo_steps_measured": len(measured),
            "trl_grpo_prompts_per_step": prompts_per_step,
            "trl_grpo_num_generations": generations,
            "trl_grpo_sequences_per_step": prompts_per_step * generations,
            "trl_grpo_max_completion_length": max_len,
            "trl_grpo_completion_tokens_per_step": statistics.median(t for _, t in measured)}


def main(argv=None) -> int:
    args = parse_args(argv)
    from crsp_ops.config import load_settings
    from crsp_ops.crsp.accelerator import make_accelerator
    from crsp_ops.crsp.selfplay_trainer import SelfPlaySettings, SelfPlayTrainer

    overrides = [f"train.steps={args.steps + 1}", f"train.algorithm={args.algorithm}",
                 "tracking.enabled=n", f"train.checkpoint_interval={10**6}", *args.overrides]
    settings = load_settings(REPO, overrides).settings
    model, tokenizer = load_policy(args)
    params = sum(p.numel() for p in model.parameters())
    accelerator = make_accelerator(args.mixed_precision, args.device)
    with tempfile.TemporaryDirectory() as out:
        trainer = SelfPlayTrainer(
            model, tokenizer, SelfPlaySettings(settings.crsp, settings.reward, settings.train),
            out_dir=out, accelerator=accelerator)
        records = []
        try:
            for _ in range(args.steps + 1):
                metrics, _ = trainer.train_step()
                trainer.step += 1
                records.append(metrics)
        finally:
            trainer.close()
    measured = records[1:] or records
    step_s = statistics.median(m["perf/step_time_s"] for m in measured)
    result = {
        "benchmark": "train_step", "algorithm": args.algorithm, "device": str(accelerator.device),
        "mixed_precision": args.mixed_precision, "model_parameters": params,
        "steps_measured": len(measured), "step_time_s": round(step_s, 4),
        "generation_s": round(statistics.median(m["perf/generation_s"] for m in measured), 4),
        "update_s": round(statistics.median(m.get("perf/update_s", 0.0) for m in measured), 4),
        "tokens_per_s": round(statistics.median(m["perf/tokens_per_s"] for m in measured), 2),
        "rollouts_per_step": statistics.median(m.get("rollouts/count", 0) for m in measured),
        "solve_tasks_per_step": statistics.median(
            m.get("tasks/solved_per_step", 0) for m in measured),
    }
    prompts = max(1, round(result["solve_tasks_per_step"]))
    result.update(trl_comparison(args, settings, prompts))
    if result["trl_grpo_step_s"]:
        result["crsp_over_trl_step_time_ratio"] = round(step_s / result["trl_grpo_step_s"], 3)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
