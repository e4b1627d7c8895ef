"""The CRSP side of a measured step, one code path for every step mode (and server_rollouts).

The project's settings with solve-only overrides (``load_bench_settings``), one seed task per
problem type as the prompts (``bench_tasks``), and warm-up + timed steps of a trainer built
through ``build_trainer`` (``run_crsp``), with this process's peak memory.
"""

from __future__ import annotations

import dataclasses
import resource
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def load_bench_settings(args):
    """The project's settings with the benchmark's solve-only overrides."""
    from crsp_ops.config import load_settings

    overrides = [f"train.steps={args.steps + 1}", "tracking.enabled=n",
                 f"train.checkpoint_interval={10**6}", "train.proposals_per_step=0",
                 "train.critiques_per_task=0", "train.tasks_per_type=1",
                 f"train.mixed_precision={args.mixed_precision}", *args.overrides]
    return load_settings(REPO, overrides).settings


def bench_tasks(settings) -> list:
    """One seed task per configured problem type: both sides' prompts."""
    from crsp_ops.crsp.tasks import starter_tasks
    from crsp_ops.crsp.tasks.task_types import TaskType

    return [starter_tasks(TaskType(name))[0] for name in settings.crsp.problem_types]


def peak_memory_gb(device: str) -> float:
    """This process's peak: CUDA allocations on a GPU, resident set size on CPU."""
    import torch

    if device == "cuda":
        return torch.cuda.max_memory_allocated() / 2**30
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def run_crsp(args, settings, model, tokenizer) -> dict:
    """Warm-up + ``args.steps`` CRSP steps; per-step seconds, tokens and sequences."""
    from dataclasses import replace

    from crsp_ops.crsp.policy.accelerator import make_accelerator
    from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
    from crsp_ops.crsp.trainer.build import build_trainer

    tasks = bench_tasks(settings)
    sequences = len(tasks) * settings.train.solver_samples
    generation = dataclasses.replace(settings.generation, batch_size=sequences)
    accelerator = make_accelerator(args.mixed_precision, args.device)
    steps = []
    with tempfile.TemporaryDirectory() as out:
        built = time.perf_counter()
        trainer = build_trainer(replace(settings, generation=generation), model, tokenizer,
                                out_dir=out, accelerator=accelerator,
                                buffers=TaskBuffers({task.task_type: [task] for task in tasks},
                                                    capacity=64))
        build_s = time.perf_counter() - built
        if args.full_length:
            trainer.generation.backend.stop_ids = (full_length_stop_id(tokenizer),)
        try:
            for _ in range(args.steps + 1):
                metrics, _ = trainer.train_step()
                trainer.step += 1
                steps.append({"step_s": metrics["perf/step_time_s"],
                              "generation_s": metrics["perf/generation_s"],
                              "update_s": metrics["perf/update_s"],
                              "completion_tokens": metrics["response_tokens"],
                              "trained_tokens": metrics.get("trained_tokens", 0.0),
                              "sequences": metrics.get("rollouts/count", 0.0)})
        finally:
            trainer.close()
    return {"steps": steps[1:], "build_s": build_s}


def full_length_stop_id(tokenizer) -> int:
    """The pad id, which ends nothing a model generates (``--full-length``)."""
    if tokenizer.pad_token_id is None or tokenizer.pad_token_id == tokenizer.eos_token_id:
        raise ValueError("--full-length needs a tokenizer whose pad token is not its EOS")
    return int(tokenizer.pad_token_id)
