"""Profile CRSP steps with torch.profiler: the top operators by self CPU time, one JSON line.

    python -m benchmarks.step profile --model tiny --steps 1
    python -m benchmarks.step profile --model smollm2-shape --tokenizer models/converted

The same solve-only step as the ``time`` mode (``crsp_side.run_crsp``; one warm-up step
unprofiled); prints the phase times and the ``--top`` operators (self CPU seconds, calls) as
JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from benchmarks.model_shapes import load_model
from benchmarks.step.crsp_side import REPO, load_bench_settings, peak_memory_gb, run_crsp


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--tokenizer", default=str(REPO / "models" / "base"))
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    parser.add_argument("--mixed-precision", default="no", choices=["no", "fp16", "bf16"])
    parser.add_argument("--set", dest="overrides", action="append", default=[])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--full-length", action="store_true",
                        help="stop only on the pad id: every sequence is the budget (time mode's)")
    args = parser.parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(args.threads)

    settings = load_bench_settings(args)
    with tempfile.TemporaryDirectory() as scratch:
        model, tokenizer = load_model(args.model, Path(args.tokenizer), Path(scratch))
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            result = run_crsp(args, settings, model, tokenizer)
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events) or 1
    top = [{"op": e.key, "self_cpu_s": round(e.self_cpu_time_total / 1e6, 3),
            "share": round(e.self_cpu_time_total / total, 3), "calls": e.count}
           for e in events[: args.top]]
    print(json.dumps({"benchmark": "profile_step", "model": args.model,
                      "steps": result["steps"], "peak_memory_gb": round(
                          peak_memory_gb(args.device), 3), "top_ops": top}))
    return 0
