"""Peak memory and step time of the trainer's memory modes, side by side; one JSON line.

    flock /tmp/crsp_cpu.lock .venv/bin/python -m benchmarks.step memory     # CPU, ~5 min
    python -m benchmarks.step memory --device cuda --dtype bf16             # a GPU
    python -m benchmarks.step memory --table   # docs/scaling.md's table, from the formula

``--updates`` (2) updates (``policy_update``: forward, backward, AdamW step) of the
SmolLM2-135M shape (``model_shapes.SHAPES``, random weights, seed 0) on the same batch:
``--rows`` rollouts of a ``--prompt``-token prompt and a ``--completion``-token completion
(the 512-token budget), each row its own micro-batch as the trainer packs them. Five modes:
``full`` fine-tuning, ``lora`` (rank ``--rank``, every linear projection), ``lora+ckpt`` and
``full+ckpt`` (activation checkpointing), and ``lora+bf16`` (``model.dtype=bf16`` under LoRA:
the frozen base built in bf16, the adapter fp32, bf16 autocast; ``crsp.policy.precision``).
Each mode runs in a fresh subprocess, so its peak is its own:

* CPU: ``ru_maxrss`` (the kernel's peak resident set) minus the resident set measured after
  imports, before the model is built — so weights, gradients, AdamW state and activations all
  count, the interpreter and libraries do not (``tracemalloc`` would miss torch's allocator).
  The subprocess runs with glibc's ``MALLOC_MMAP_THRESHOLD_=65536``: every tensor above 64 KiB
  is its own mapping, returned to the system when freed, so the resident set follows the live
  tensors (with glibc's default heap a freed activation stayed resident and the LoRA peak
  measured 2.80 GiB against 1.54 GiB of live tensors). That costs a page fault per
  allocation, so the step times come from a second pass of every mode with the default heap;
* CUDA: ``torch.cuda.max_memory_allocated``.

The loss of each mode is reported too: checkpointing recomputes the same activations, so
``full`` vs ``full+ckpt`` (and ``lora`` vs ``lora+ckpt``) must agree to < 1e-5; LoRA's B starts
at 0, so ``lora`` equals ``full`` before its first step (``lora+bf16`` from the same draws
rounded to bf16, so its loss differs by that rounding).

``predicted_bytes`` is ``memory_formula``'s estimate for the same shape and mode (the formula
of docs/scaling.md's "fits on my GPU?" table); the output gives measured / predicted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.model_shapes import SHAPES

os.environ.setdefault("HF_HUB_OFFLINE", "1")
REPO = Path(__file__).resolve().parents[2]
MODES = ("full", "lora", "lora+ckpt", "full+ckpt", "lora+bf16")
MMAP_THRESHOLD = 65536  # bytes: glibc serves larger allocations by mmap (returned on free)


def memory_formula(*, params: int, trainable: int, layers: int, hidden: int,
                   intermediate: int, kv_hidden: int, vocab: int, tokens: int,
                   response_tokens: int, checkpointing: bool, weight_bytes: int = 4,
                   activation_bytes: int = 4, shards: int = 1) -> dict:
    """Estimated peak bytes of one update of a Llama-shaped model, by part, per rank.

    * weights: ``trainable · 4 + (params − trainable) · weight_bytes``: trained weights are
      fp32, frozen ones (the LoRA base) ``weight_bytes`` each (2 under ``model.dtype=bf16``);
    * gradients + AdamW state: ``trainable · (4 + 8)`` bytes (fp32 grads, two fp32 moments);
      full fine-tuning also keeps fp32 master weights, counted in ``weights`` at 4 bytes;
    * ``shards`` > 1 (``train.sharding=fsdp2`` over that many ranks): weights, gradients and
      AdamW state are split over the ranks, and each rank adds ``replica``, the full weights
      it generates from (``crsp_ops.crsp.policy.sharding.GenerationReplica``); a layer's
      weights are gathered in full while it runs (one layer: small beside the rest, not
      counted);
    * activations of one micro-batch of ``tokens`` tokens: without checkpointing each layer
      keeps about ``10·hidden + 4·intermediate + 2·kv_hidden`` values per token (norms, q/k/v,
      attention and MLP intermediates), ``activation_bytes`` each (2 for a bf16 base under
      bf16 autocast); with it, each layer keeps its input (``hidden``) and one layer's full
      set is alive during its recomputation;
    * logits: ``response_tokens · vocab`` values and their gradient (prompt positions never
      reach the vocabulary projection);
    * the optimizer step: torch's foreach AdamW takes ``sqrt(v)`` of every trainable tensor at
      once (``_foreach_sqrt``), ``trainable · 4`` bytes alive while activations and logits are
      already freed, so the peak is the larger of the two (from 1.5B parameters up, full
      fine-tuning's peak is this step: ~20 bytes per parameter on an H200, docs/scaling.md).
    """
    per_layer_token = 10 * hidden + 4 * intermediate + 2 * kv_hidden
    if checkpointing:
        activations = tokens * (layers * hidden + per_layer_token) * activation_bytes
    else:
        activations = tokens * layers * per_layer_token * activation_bytes
    weights = trainable * 4 + (params - trainable) * weight_bytes
    parts = {"weights": weights // shards,
             "grads_and_optimizer": trainable * 12 // shards,
             "replica": params * weight_bytes if shards > 1 else 0,
             "activations": activations, "logits": response_tokens * vocab * 4 * 2,
             "optimizer_step": trainable * 4 // shards}
    held = parts["weights"] + parts["grads_and_optimizer"] + parts["replica"]
    parts["total"] = held + max(parts["activations"] + parts["logits"],
                                parts["optimizer_step"])
    return parts


# public configs (hidden, layers, intermediate, kv_hidden, vocab, tied embeddings) of the
# docs/scaling.md table; SmolLM2-135M's is model_shapes.SHAPES["smollm2-shape"]
TABLE_SHAPES = {
    "SmolLM2-135M": (576, 30, 1536, 192, 49152, True),
    "Qwen2.5-0.5B": (896, 24, 4864, 128, 151936, True),
    "Qwen2.5-1.5B": (1536, 28, 8960, 256, 151936, True),
    "SmolLM2-1.7B": (2048, 24, 8192, 2048, 49152, True),
    "Qwen2.5-3B": (2048, 36, 11008, 256, 151936, True),
    "Qwen2.5-7B": (3584, 28, 18944, 512, 152064, False),
    "Llama-3.1-8B": (4096, 32, 14336, 1024, 128256, False),
}


def llama_params(hidden: int, layers: int, intermediate: int, kv_hidden: int, vocab: int,
                 tied: bool) -> int:
    """Parameters of a Llama-shaped model (no biases; norms included)."""
    per_layer = 2 * hidden * hidden + 2 * hidden * kv_hidden + 3 * hidden * intermediate \
        + 2 * hidden
    return vocab * hidden * (1 if tied else 2) + layers * per_layer + hidden


def lora_params(hidden: int, layers: int, intermediate: int, kv_hidden: int, rank: int) -> int:
    """A rank-``rank`` adapter on every linear projection of every layer (A and B)."""
    return rank * layers * (9 * hidden + 2 * kv_hidden + 3 * intermediate)


SHARDS = 8  # the table's sharded column: full fine-tuning over one 8-GPU node


def fits_table(rank: int, tokens: int, response_tokens: int) -> list[dict]:
    """The formula's GiB per model and mode (fp32 weights; ``lora+bf16``: a bf16 base)."""
    rows = []
    for name, (hidden, layers, inter, kv, vocab, tied) in TABLE_SHAPES.items():
        params = llama_params(hidden, layers, inter, kv, vocab, tied)
        adapter = lora_params(hidden, layers, inter, kv, rank)
        row = {"model": name, "params_b": round(params / 1e9, 2)}
        for mode in MODES:
            lora = mode.startswith("lora")
            half = 2 if mode == "lora+bf16" else 4  # model.dtype=bf16: base and activations
            parts = memory_formula(params=params + adapter * lora, weight_bytes=half,
                                   activation_bytes=half,
                                   trainable=adapter if lora else params, layers=layers,
                                   hidden=hidden, intermediate=inter, kv_hidden=kv, vocab=vocab,
                                   tokens=tokens, response_tokens=response_tokens,
                                   checkpointing=mode.endswith("+ckpt"))
            row[mode] = round(parts["total"] / 2**30, 1)
        sharded = memory_formula(params=params, trainable=params, layers=layers, hidden=hidden,
                                 intermediate=inter, kv_hidden=kv, vocab=vocab, tokens=tokens,
                                 response_tokens=response_tokens, checkpointing=True,
                                 shards=SHARDS)
        row[f"fsdp2x{SHARDS}+ckpt"] = round(sharded["total"] / 2**30, 1)
        rows.append(row)
    return rows


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="smollm2-shape", choices=sorted(SHAPES))
    parser.add_argument("--rows", type=int, default=2)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--completion", type=int, default=512)
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--dtype", default="fp32", choices=("fp32", "bf16"),
                        help="bf16: accelerate mixed precision (weights stay fp32); the "
                             "lora+bf16 mode computes in bf16 either way")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--updates", type=int, default=2,
                        help="updates per mode; the peak covers all, step_s is the last")
    parser.add_argument("--modes", nargs="+", choices=MODES, default=list(MODES),
                        help="the modes to compare (default all; a comparison is reported "
                             "where both of its modes ran)")
    parser.add_argument("--mode", choices=MODES, help="run one mode here (the subprocess)")
    parser.add_argument("--table", action="store_true",
                        help="print the formula's fits-on-my-GPU table (no measurement)")
    return parser.parse_args(argv)


def _rss_bytes() -> int:
    import psutil

    return psutil.Process().memory_info().rss


def run_mode(args) -> dict:
    """One mode in this process: build, one update, peak memory and time."""
    baseline = _rss_bytes()
    # every import here, before the second reading: libraries are not the mode's cost (the
    # helpers below import again, from the module cache)
    import numpy as np  # noqa: F401
    import torch
    from accelerate import Accelerator  # noqa: F401
    from transformers import AutoModelForCausalLM, LlamaConfig  # noqa: F401

    from crsp_ops.crsp.policy.peft_setup import parameter_counts, prepare_policy  # noqa: F401
    from crsp_ops.crsp.policy.precision import training_precision, weights_dtype
    from crsp_ops.crsp.rl.algorithms import get_algorithm  # noqa: F401
    from crsp_ops.crsp.rl.update import UpdateOptions, policy_update  # noqa: F401
    from crsp_ops.inference.rollouts import Rollout, TrainingBatch  # noqa: F401

    torch.set_num_threads(args.threads)
    baseline = max(baseline, _rss_bytes())  # after imports: libraries are not the mode's cost
    torch.manual_seed(0)
    precision = training_precision("bf16" if args.mode == "lora+bf16" else "auto", args.device,
                                   lora=args.mode.startswith("lora"),
                                   mixed_precision="bf16" if args.dtype == "bf16" else "no")
    model, optimizer, accelerator, (trainable, total) = _policy_and_optimizer(args, precision)
    batch = _random_batch(args)
    options = _update_options()
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
        baseline = 0
    times, losses, metrics = _timed_updates(args, model, optimizer, accelerator, batch, options)
    peak = torch.cuda.max_memory_allocated() if args.device == "cuda" else \
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - baseline  # KiB on Linux
    predicted = _predicted(args, precision, trainable=trainable, total=total)
    return {"mode": args.mode, "peak_bytes": int(peak), "step_s": round(times[-1], 3),
            "first_step_s": round(times[0], 3), "loss": losses[0], "losses": losses,
            "grad_norm": metrics["grad_norm"],
            "trainable_params": trainable, "total_params": total,
            "weights_dtype": weights_dtype(model), "mixed_precision": precision.mixed_precision,
            "predicted_bytes": predicted["total"], "predicted_parts": predicted}


def _policy_and_optimizer(args, precision):
    """The mode's policy (random weights, seeded), AdamW, both prepared; its parameter counts."""
    import torch
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM, LlamaConfig

    from crsp_ops.crsp.policy.peft_setup import parameter_counts, prepare_policy

    lora = args.mode.startswith("lora")
    # built in its dtype, as from_pretrained(dtype=...) loads it: no fp32 copy in the peak
    model = AutoModelForCausalLM.from_config(
        LlamaConfig(**SHAPES[args.shape], max_position_embeddings=8192),
        dtype=precision.load_dtype or torch.float32)
    settings = argparse.Namespace(
        lora_rank=args.rank if lora else 0, lora_alpha=2.0 * args.rank,
        lora_dropout=0.0, lora_target_modules=("all-linear",),
        gradient_checkpointing=args.mode.endswith("+ckpt"))
    model = prepare_policy(model, settings)
    counts = parameter_counts(model)
    accelerator = Accelerator(cpu=args.device == "cpu", mixed_precision=precision.mixed_precision)
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5)
    model, optimizer = accelerator.prepare(model, optimizer)
    model.train()
    return model, optimizer, accelerator, counts


def _random_batch(args):
    """``--rows`` rollouts of random tokens (seed 0) with a uniform sampler's log-probs."""
    import numpy as np

    from crsp_ops.inference.rollouts import Rollout, TrainingBatch

    rng = np.random.default_rng(0)
    vocab = SHAPES[args.shape]["vocab_size"]
    rows = [Rollout(env_name="solve/math", env_example_id=str(i),
                    prompt_tokens=rng.integers(3, vocab, args.prompt),
                    response_tokens=rng.integers(3, vocab, args.completion),
                    response_logprobs=np.full(args.completion, -np.log(vocab)),
                    token_rewards=np.zeros(args.completion), episode_reward=float(i % 2),
                    logprob_semantics="raw") for i in range(args.rows)]
    return TrainingBatch.from_rollouts(rows, pad_token_id=0)


def _update_options():
    """TR-RPG, one micro-batch per row, one epoch."""
    from crsp_ops.crsp.rl.algorithms import get_algorithm
    from crsp_ops.crsp.rl.update import UpdateOptions

    # behaviour log-probs of a uniform sampler: the loss (and its gradient) depend on the model
    return UpdateOptions(algorithm=get_algorithm("trrpg"), betas={"solve": 0.05},
                         log_ratio_clamp=10.0, ratio_clip=None, advantage_eps=1e-6,
                         micro_batch_size=1, update_epochs=1, max_grad_norm=1.0)


def _timed_updates(args, model, optimizer, accelerator, batch,
                   options) -> tuple[list, list, dict]:
    """``--updates`` updates on the batch: their seconds, losses, and the last one's metrics."""
    import torch

    from crsp_ops.crsp.rl.update import policy_update

    times, losses = [], []
    for _ in range(args.updates):  # from the second on, AdamW's state is alive throughout
        started = time.perf_counter()
        metrics = policy_update(model, optimizer, accelerator, batch, ["solve"] * args.rows,
                                ["math"] * args.rows, options, temperature=1.0)
        if args.device == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - started)
        losses.append(metrics["loss"])
    return times, losses, metrics


def _predicted(args, precision, *, trainable: int, total: int) -> dict:
    """``memory_formula``'s estimate for this shape and mode (a bf16 base: 2 bytes a value)."""
    import torch

    shape = SHAPES[args.shape]
    half = 2 if precision.load_dtype in (torch.bfloat16, torch.float16) else 4
    return memory_formula(
        params=total, trainable=trainable, weight_bytes=half, activation_bytes=half,
        layers=shape["num_hidden_layers"], hidden=shape["hidden_size"],
        intermediate=shape["intermediate_size"],
        kv_hidden=shape["hidden_size"] * shape["num_key_value_heads"]
        // shape["num_attention_heads"], vocab=shape["vocab_size"],
        tokens=args.prompt + args.completion, response_tokens=args.completion,
        checkpointing=args.mode.endswith("+ckpt"))


def spawn(args, mode: str, *, mmap: bool) -> dict:
    """Run ``mode`` in a fresh interpreter; its last stdout line is the result.

    ``mmap``: the memory pass (see the module docstring); without it, the timing pass.
    """
    argv = [sys.executable, "-m", "benchmarks.step", "memory", "--mode", mode,
            "--shape", args.shape, "--rows", str(args.rows), "--prompt", str(args.prompt),
            "--completion", str(args.completion), "--rank", str(args.rank),
            "--device", args.device, "--dtype", args.dtype, "--threads", str(args.threads),
            "--updates", str(args.updates)]
    # large blocks straight from mmap: freed tensors leave the resident set, so the CPU peak
    # is live tensors, not glibc's fragmented heap (which put LoRA above full FT in a test run)
    # (an mmap per tensor costs page faults on every allocation: the timing pass runs without)
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": str(MMAP_THRESHOLD)} if mmap else None
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, env=env)
    if done.returncode:
        raise SystemExit(f"mode {mode} failed:\n{done.stderr[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def comparisons(results: dict, modes: dict) -> dict:
    """Checkpointing's loss differences and the floors, for the pairs of modes that ran."""
    ran, out = results.keys(), {}
    # the first update's loss: the same weights and batch in every fp32 mode
    if {"full", "full+ckpt"} <= ran:
        out["ckpt_loss_diff_full"] = abs(results["full"]["loss"] - results["full+ckpt"]["loss"])
    if {"lora", "lora+ckpt"} <= ran:
        out["ckpt_loss_diff_lora"] = abs(results["lora"]["loss"] - results["lora+ckpt"]["loss"])
    if {"full", "full+ckpt"} <= ran:
        out["last_loss_diff_full"] = abs(results["full"]["losses"][-1]
                                         - results["full+ckpt"]["losses"][-1])
    if modes.get("lora+ckpt", {}).get("peak_vs_full") is not None:
        out["floor_lora_ckpt_le_40pct"] = modes["lora+ckpt"]["peak_vs_full"] <= 0.40
    diffs = [value for key, value in out.items() if key.startswith("ckpt_loss_diff")]
    if diffs:
        out["floor_ckpt_loss_lt_1e-5"] = max(diffs) < 1e-5
    return out


def main(argv=None) -> int:
    args = parse_args(argv)
    if args.mode:
        print(json.dumps(run_mode(args)))
        return 0
    if args.table:
        print(json.dumps({"benchmark": "memory_formula_table", "lora_rank": args.rank,
                          "tokens": args.prompt + args.completion,
                          "rows": fits_table(args.rank, args.prompt + args.completion,
                                             args.completion)}))
        return 0
    results = {mode: spawn(args, mode, mmap=args.device == "cpu") for mode in args.modes}
    if args.device == "cpu":  # step times from a pass with glibc's default heap
        for mode in args.modes:
            timed = spawn(args, mode, mmap=False)
            results[mode].update(step_s=timed["step_s"], first_step_s=timed["first_step_s"],
                                 timing_pass_loss=timed["loss"])
    full = results["full"]["peak_bytes"] if "full" in results else None
    gib = 2**30
    out = {
        "benchmark": "memory_modes", "shape": args.shape, "device": args.device,
        "dtype": args.dtype, "rows": args.rows, "prompt_tokens": args.prompt,
        "completion_tokens": args.completion, "lora_rank": args.rank,
        "peak_measure": "cuda max_memory_allocated" if args.device == "cuda"
        else f"ru_maxrss minus RSS after imports (MALLOC_MMAP_THRESHOLD_={MMAP_THRESHOLD})",
        "modes": {mode: {"peak_gib": round(r["peak_bytes"] / gib, 3),
                         "peak_vs_full": round(r["peak_bytes"] / full, 3) if full else None,
                         "step_s": r["step_s"], "first_step_s": r["first_step_s"],
                         "loss": r["loss"],
                         "grad_norm": r["grad_norm"],
                         "trainable_params": r["trainable_params"],
                         "weights_dtype": r["weights_dtype"],
                         "mixed_precision": r["mixed_precision"],
                         "predicted_gib": round(r["predicted_bytes"] / gib, 3),
                         "measured_over_predicted": round(r["peak_bytes"]
                                                          / r["predicted_bytes"], 3)}
                  for mode, r in results.items()},
        "updates": args.updates,
    }
    out.update(comparisons(results, out["modes"]))
    print(json.dumps(out))
    return 0
