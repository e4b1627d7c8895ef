"""CRSP step versus TRL's GRPO step, like for like; prints one JSON line.

    python -m benchmarks.step time --model tiny --steps 2 --reps 3           # CPU, ~minutes
    python -m benchmarks.step time --model smollm2-shape --steps 1 --reps 3
    python -m benchmarks.step time --model qwen2-0.5b-shape --device cuda --mixed-precision bf16

Like for like: both sides train the same model (``model_shapes``: the tiny model, or a random
SmolLM2-135M / Qwen2-0.5B shape with a vocabulary of the real size) on the same prompts —
CRSP's solve prompts of one seed task per configured problem type — with the same number of
sequences (``train.solver_samples`` per prompt), the same completion-token budget
(``train.max_new_tokens_solve``), temperature, learning rate and precision, one optimizer step
per batch, no KL reference (GRPO ``beta=0``; CRSP's TR-RPG has none). The CRSP step runs
solve-only (no proposals, no critiques) so the sequences are the same; it still scores every
solution in the sandbox, while GRPO's reward is a pure length reward. Each side runs in a fresh
subprocess (one warm-up step, then ``--steps`` timed steps), so its peak memory is its own:
``ru_maxrss`` on CPU, ``max_memory_allocated`` on CUDA. Repetitions alternate the order of the
sides; ratios are CRSP / GRPO per repetition, reported as a median with a 95% bootstrap
interval (``paired``). Update-only time: the step minus its generation (and, for CRSP, the
sandbox scoring); tokens/s counts generated plus trained tokens, as the trainer does.

Not alike by design: CRSP encodes each distinct prompt once per step (a shared prefill in
generation, a shared prefix with gradient in the update), ``GRPOTrainer`` once per sample; the
sequences and the tokens trained on are the same, so that saving is CRSP's and is measured.

``--full-length`` makes the token counts equal by construction: both sides stop only on the pad
id (which the models never emit), so every sequence decodes the whole budget and is trained on
whole; without it a trained model's sequences end at its own EOS, differently on each side.

``--baseline-src`` adds a third side: CRSP from another source tree (``PYTHONPATH``, e.g. the
``src`` of a ``git worktree`` at the pre-change commit), in the same rotation, so a change is
measured against the same GRPO runs (``*_before`` keys and ``update_after_vs_before``).
``--colocated-python`` adds a side too: CRSP generating with the colocated vLLM engine
(``generation.backend=vllm_colocate``), run by that interpreter (the engine venv's, where
vLLM is installed), in the same rotation; ``colocated_vs_in_process`` holds its paired ratios
to the in-process CRSP side (generation, step, tokens/s), and ``colocated_startup_s`` the
engine's start-up (the trainer's construction), which the timed steps do not include.
``--log`` appends each side's JSON as it ends, so an interrupted run keeps its repetitions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.model_shapes import SHAPES, load_model
from benchmarks.paired import summary
from benchmarks.step.crsp_side import (
    REPO,
    bench_tasks,
    full_length_stop_id,
    load_bench_settings,
    peak_memory_gb,
    run_crsp,
)
from benchmarks.trl_grpo import grpo_config

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny",
                        help="tiny, smollm2-shape, qwen2-0.5b-shape, or an HF model dir")
    parser.add_argument("--tokenizer", default=str(REPO / "models" / "base"),
                        help="tokenizer dir (the tiny model's dir for --model tiny)")
    parser.add_argument("--steps", type=int, default=2, help="timed steps per side and rep")
    parser.add_argument("--reps", type=int, default=3, help="interleaved repetitions")
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--mixed-precision", default="no", choices=["no", "fp16", "bf16"])
    parser.add_argument("--threads", type=int, default=1,
                        help="torch CPU threads per side (1: no OpenMP oversubscription on a "
                             "shared CPU)")
    parser.add_argument("--trl-micro-batch", type=int, default=4,
                        help="GRPO sequences per forward/backward (gradient accumulation)")
    parser.add_argument("--full-length", action="store_true",
                        help="both sides stop only on the pad id: every sequence is the budget")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="extra section.key=value overrides (both sides read them)")
    parser.add_argument("--baseline-src",
                        help="also run CRSP from this src dir (PYTHONPATH), e.g. a worktree's")
    parser.add_argument("--colocated-python",
                        help="also run CRSP with the colocated vLLM engine, by this python")
    parser.add_argument("--colocated-memory", type=float, default=0.15,
                        help="generation.memory_fraction of the colocated side")
    parser.add_argument("--log", help="append each side's JSON line to this file as it ends")
    parser.add_argument("--side", choices=["crsp", "grpo"], help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def run_grpo(args, settings, model, tokenizer) -> dict:
    """Warm-up + ``args.steps`` GRPO optimizer steps on the same prompts and budget."""
    import contextlib

    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from crsp_ops.crsp.tasks import solve_messages

    train = settings.train
    tasks = bench_tasks(settings)
    sequences = len(tasks) * train.solver_samples
    micro = min(args.trl_micro_batch, sequences)
    if sequences % micro:
        raise ValueError(f"--trl-micro-batch {micro} must divide {sequences} sequences")
    max_len = train.max_new_tokens_solve
    steps: list[dict] = []
    generation_marks: list[float] = []

    def length_reward(completions, completion_ids, **_):
        steps.append({"completion_tokens": float(sum(len(ids) for ids in completion_ids))})
        return [len(ids) / max_len for ids in completion_ids]

    timed_grpo = _timed_grpo_class(GRPOTrainer, args, tokenizer, generation_marks)
    clock = _step_clock(TrainerCallback)
    rows = [{"prompt": solve_messages(task)} for task in tasks] * (args.steps + 1)
    with tempfile.TemporaryDirectory() as out:
        config = grpo_config(
            out, samples=train.solver_samples, sequences=sequences, micro=micro,
            max_new_tokens=max_len, temperature=train.temperature, seed=settings.crsp.seed,
            device=args.device, mixed_precision=args.mixed_precision,
            learning_rate=train.learning_rate, weight_decay=train.weight_decay,
            max_grad_norm=train.max_grad_norm, max_steps=args.steps + 1)
        trainer = timed_grpo(model=model, reward_funcs=length_reward, args=config,
                             processing_class=tokenizer, callbacks=[clock],
                             train_dataset=Dataset.from_list(rows))
        with contextlib.redirect_stdout(sys.stderr):  # keep stdout to the one JSON line
            trainer.train()
    for index, step in enumerate(steps):
        begin, end = clock.marks[2 * index], clock.marks[2 * index + 1]
        step.update(step_s=end - begin, generation_s=generation_marks[index],
                    update_s=end - begin - generation_marks[index], sequences=float(sequences),
                    trained_tokens=step["completion_tokens"])
    return {"steps": steps[1:], "micro_batch": micro}


def _timed_grpo_class(grpo_trainer: type, args, tokenizer, generation_marks: list[float]) -> type:
    """``GRPOTrainer`` timing each generation into ``generation_marks`` (``--full-length``: it
    stops on the pad id only)."""

    class TimedGRPO(grpo_trainer):
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            if args.full_length:  # generation stops, and the completion mask ends, at pad only
                self.eos_token_ids = [full_length_stop_id(tokenizer)]
                self.generation_kwargs["eos_token_id"] = self.eos_token_ids
                self.generation_config.eos_token_id = self.eos_token_ids

        def _generate_and_score_completions(self, *a, **k):
            start = time.perf_counter()
            out = super()._generate_and_score_completions(*a, **k)
            generation_marks.append(time.perf_counter() - start)
            return out

    return TimedGRPO


def _step_clock(trainer_callback: type):
    """A callback whose ``marks`` are every step's begin and end times, in turn."""

    class StepClock(trainer_callback):
        def __init__(self):
            super().__init__()
            self.marks: list[float] = []

        def on_step_begin(self, *_, **__):
            self.marks.append(time.perf_counter())

        def on_step_end(self, *_, **__):
            self.marks.append(time.perf_counter())

    return StepClock()


def run_side(args) -> None:
    """Child process: one side's steps and peak memory as one JSON line."""
    import torch

    torch.manual_seed(0)
    if args.threads:
        torch.set_num_threads(args.threads)
    settings = load_bench_settings(args)
    with tempfile.TemporaryDirectory() as scratch:
        model, tokenizer = load_model(args.model, Path(args.tokenizer), Path(scratch))
        if args.device == "cuda":
            model = model.to("cuda")
        result = (run_crsp if args.side == "crsp" else run_grpo)(args, settings, model,
                                                                  tokenizer)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    result["peak_memory_gb"] = peak_memory_gb(args.device)
    print(json.dumps(result))


def spawn(args, side: str) -> dict:
    """Run one side in a fresh interpreter; return its JSON (``crsp_before``: the baseline's)."""
    env = dict(os.environ)
    if side == "crsp_before":
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [args.baseline_src,
                                                           env.get("PYTHONPATH")]))
    python = args.colocated_python if side == "crsp_colocated" else sys.executable
    base = side.removesuffix("_before").removesuffix("_colocated")
    argv = [python, "-m", "benchmarks.step", "time", "--side", base, "--model", args.model,
            "--tokenizer", args.tokenizer, "--steps", str(args.steps), "--device", args.device,
            "--mixed-precision", args.mixed_precision, "--threads", str(args.threads),
            "--trl-micro-batch", str(args.trl_micro_batch)]
    if args.full_length:
        argv.append("--full-length")
    for override in args.overrides:
        argv += ["--set", override]
    if side == "crsp_colocated":
        argv += ["--set", "generation.backend=vllm_colocate",
                 "--set", f"generation.memory_fraction={args.colocated_memory}"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env, cwd=REPO)
    if done.returncode:
        raise RuntimeError(f"{side} side failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    if args.log:
        with open(args.log, "a") as log:
            log.write(json.dumps({"side": side, **result}) + "\n")
    return result


def median_of(result: dict, key: str) -> float:
    return statistics.median(step[key] for step in result["steps"])


def tokens_per_s(result: dict) -> float:
    return statistics.median((s["completion_tokens"] + s["trained_tokens"]) / s["step_s"]
                             for s in result["steps"])


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.side:
        run_side(args)
        return 0
    runs = []
    sides = ["crsp", "grpo"] + (["crsp_before"] if args.baseline_src else []) \
        + (["crsp_colocated"] if args.colocated_python else [])
    for rep in range(args.reps):
        order = sides[rep % len(sides):] + sides[:rep % len(sides)]  # each side each place
        runs.append({side: spawn(args, side) for side in order})
    print(json.dumps(comparison(args, runs)))
    return 0


def ratios(key: str, numerator: list[dict], denominator: list[dict]) -> dict:
    """Per repetition, ``numerator``'s median ``key`` over ``denominator``'s: paired summary."""
    pairs = zip(numerator, denominator, strict=True)
    return summary([median_of(c, key) / median_of(g, key) for c, g in pairs], digits=3)


def med(results: list[dict], fn, digits=3):
    """The median of ``fn`` over the repetitions' results, rounded."""
    return round(statistics.median(fn(r) for r in results), digits)


def comparison(args, runs: list[dict]) -> dict:
    """The JSON line: CRSP beside GRPO (and the baseline and colocated sides when they ran)."""
    crsp = [r["crsp"] for r in runs]
    grpo = [r["grpo"] for r in runs]
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    result = {
        "benchmark": "train_step", "model": args.model, "device": args.device,
        "mixed_precision": args.mixed_precision, "parameters": crsp[0]["parameters"],
        "vocab_size": SHAPES.get(args.model, {}).get("vocab_size"), "commit": commit,
        "reps": args.reps, "steps_per_rep": args.steps, "threads": args.threads,
        "full_length": args.full_length,
        "sequences_per_step": {"crsp": med(crsp, lambda r: median_of(r, "sequences")),
                               "grpo": med(grpo, lambda r: median_of(r, "sequences"))},
        "completion_tokens_per_step": {
            "crsp": med(crsp, lambda r: median_of(r, "completion_tokens")),
            "grpo": med(grpo, lambda r: median_of(r, "completion_tokens"))},
        "grpo_micro_batch": grpo[0]["micro_batch"],
        "crsp_step_s": med(crsp, lambda r: median_of(r, "step_s")),
        "grpo_step_s": med(grpo, lambda r: median_of(r, "step_s")),
        "crsp_update_s": med(crsp, lambda r: median_of(r, "update_s")),
        "grpo_update_s": med(grpo, lambda r: median_of(r, "update_s")),
        "step_ratio": ratios("step_s", crsp, grpo), "update_ratio": ratios("update_s", crsp, grpo),
        "crsp_tokens_per_s": med(crsp, tokens_per_s, 1),
        "grpo_tokens_per_s": med(grpo, tokens_per_s, 1),
        "crsp_peak_memory_gb": med(crsp, lambda r: r["peak_memory_gb"]),
        "grpo_peak_memory_gb": med(grpo, lambda r: r["peak_memory_gb"]),
        "peak_memory": "max_memory_allocated" if args.device == "cuda" else "ru_maxrss",
    }
    if args.baseline_src:
        result.update(baseline_comparison(args, runs, crsp, grpo))
    if args.colocated_python:
        result.update(colocated_comparison(runs, crsp))
    return result


def baseline_comparison(args, runs: list[dict], crsp: list[dict], grpo: list[dict]) -> dict:
    """``--baseline-src``'s keys: CRSP before the change beside GRPO and beside CRSP after."""
    before = [r["crsp_before"] for r in runs]
    return {
        "baseline_src": args.baseline_src,
        "crsp_before_step_s": med(before, lambda r: median_of(r, "step_s")),
        "crsp_before_update_s": med(before, lambda r: median_of(r, "update_s")),
        "step_ratio_before": ratios("step_s", before, grpo),
        "update_ratio_before": ratios("update_s", before, grpo),
        "update_after_vs_before": ratios("update_s", crsp, before),
        "crsp_before_peak_memory_gb": med(before, lambda r: r["peak_memory_gb"])}


def colocated_comparison(runs: list[dict], crsp: list[dict]) -> dict:
    """``--colocated-python``'s keys: the colocated engine's side beside the in-process one."""
    colocated = [r["crsp_colocated"] for r in runs]
    return {
        "colocated_step_s": med(colocated, lambda r: median_of(r, "step_s")),
        "colocated_generation_s": med(colocated, lambda r: median_of(r, "generation_s")),
        "in_process_generation_s": med(crsp, lambda r: median_of(r, "generation_s")),
        "colocated_completion_tokens_per_step": med(
            colocated, lambda r: median_of(r, "completion_tokens")),
        "colocated_startup_s": med(colocated, lambda r: r["build_s"], 1),
        "in_process_startup_s": med(crsp, lambda r: r["build_s"], 1),
        "colocated_vs_in_process": {
            "generation": ratios("generation_s", colocated, crsp),
            "step": ratios("step_s", colocated, crsp),
            "tokens_per_s": summary([tokens_per_s(c) / tokens_per_s(i)
                                     for c, i in zip(colocated, crsp, strict=True)],
                                    digits=3)}}
