"""Per-step cost of the Model Runner V2 steering processor, beside the sampler's own fp32 copy.

vLLM 0.32's V2 sampler copies the logits to a fresh float32 tensor before running any logits
processor (``Sampler.apply_sampling_params``); that copy is the baseline here. The processor's
step is one gather of per-slot deltas through the device-resident cluster table for every
logits row (rows reordered and, with ``--spec-tokens``, expanded as under speculative decoding)
and one in-place add. Prints one JSON line; ``ratio`` = processor step / fp32 copy.

    python -m benchmarks.vllm_v2_apply                          # CPU, 32 requests, 151936 vocab
    python -m benchmarks.vllm_v2_apply --device cuda --requests 256 --spec-tokens 3
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch

from crsp_ops.steering.bias import ClusterBias
from crsp_ops.steering.vllm_v2 import SlotDeltas


def timed(fn, reps: int, device: str) -> float:
    """Median seconds of ``fn()`` over ``reps`` runs (after two warm-ups)."""
    for _ in range(2):
        fn()
    times = []
    for _ in range(reps):
        if device == "cuda":
            torch.cuda.synchronize()
        start = time.perf_counter()
        fn()
        if device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - start)
    return float(np.median(times))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--requests", type=int, default=32, help="requests in the batch")
    parser.add_argument("--spec-tokens", type=int, default=0, help="draft tokens per request")
    parser.add_argument("--vocab", type=int, default=151936)
    parser.add_argument("--clusters", type=int, default=66)
    parser.add_argument("--reps", type=int, default=20)
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    table = rng.integers(0, args.clusters, size=args.vocab)
    slots = SlotDeltas(ClusterBias(table, args.clusters), max_num_reqs=args.requests,
                       device=args.device)
    for slot in range(args.requests):
        slots.add(slot, {"steer_deltas": rng.normal(size=args.clusters).tolist()})
    slots.flush()
    rows_per_request = 1 + args.spec_tokens
    order = torch.from_numpy(rng.permutation(args.requests)).to(args.device)
    row_slots = order.repeat_interleave(rows_per_request).to(torch.int32)  # (rows,)
    batch_slots = order.cpu().numpy()
    logits = torch.randn(len(row_slots), args.vocab, device=args.device, dtype=torch.bfloat16)
    work = logits.float()

    copy_s = timed(lambda: torch.empty_like(logits, dtype=torch.float32).copy_(logits),
                   args.reps, args.device)
    apply_s = timed(lambda: slots.apply(work, row_slots, batch_slots), args.reps, args.device)
    print(json.dumps({
        "benchmark": "vllm_v2_apply", "device": args.device,
        "machine": platform.processor() or platform.machine(),
        "requests": args.requests, "rows": len(row_slots), "vocab": args.vocab,
        "clusters": args.clusters, "fp32_copy_ms": round(copy_s * 1e3, 3),
        "processor_ms": round(apply_s * 1e3, 3), "ratio": round(apply_s / copy_s, 3),
    }))


if __name__ == "__main__":
    main()
