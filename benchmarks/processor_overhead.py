"""Decode throughput with cluster steering versus without: same backend, same prompts, one run.

The in-process ``TransformersBackend`` generates the same greedy batch with ``deltas=None`` and
with steering deltas, in interleaved repetitions (the order alternates each repetition, so
drift in machine load hits both sides alike). The deltas are the same value for every cluster:
the full bias path runs (table gather, per-step add) while the argmax, and so every output
token, stays the same, which keeps the two token counts equal and the comparison fair.
Prints one JSON line; goal: ``ratio`` (steered / unsteered tokens per second) >= 0.97. The
ratio is the median of the per-repetition paired ratios with a 95% bootstrap interval
(``paired``); ``--reps`` sets how many, and the interval's half-width says whether the run
resolves the goal's margin (±1% needs many repetitions on a shared CPU).

    python -m benchmarks.processor_overhead                       # tiny model on CPU
    python -m benchmarks.processor_overhead --model models/base --reps 10
    python -m benchmarks.processor_overhead --device cuda --random-init   # ~0.5B, 150k vocab

``--random-init`` builds a randomly initialised Qwen2-like model (hidden 896, 24 layers, 14
heads, 2 KV heads, vocabulary 151936) with a random 12-cluster table over its whole vocabulary;
prompts still come from the tiny tokenizer (ids are a subset of the model's vocabulary).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

from benchmarks.paired import interleaved, summary

os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]
QWEN_LIKE = dict(vocab_size=151936, hidden_size=896, intermediate_size=4864,
                 num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
                 max_position_embeddings=4096, tie_word_embeddings=True)


def default_settings(scratch: Path):
    """Kconfig's defaults (the one home of defaults), read from a scratch copy of the tree."""
    from crsp_ops.config import load_settings
    from crsp_ops.paths import copy_config_tree

    root = scratch / "project"
    root.mkdir(parents=True)
    copy_config_tree(REPO, root)
    return load_settings(root, env={}).settings


def build_tiny_model(out_dir: Path, settings, train_steps: int) -> Path:
    """The embedded tiny model (Kconfig's model shape), briefly trained: speed, not quality."""
    from crsp_ops.data.financebench import load_financebench
    from crsp_ops.data.limo import load_limo
    from crsp_ops.models.chat_corpus import ChatCorpusSpec
    from crsp_ops.models.tiny_base_model import build_tiny_base_model
    from crsp_ops.models.tiny_llama import TinyLlamaSpec, TrainSpec

    model = settings.model
    report = build_tiny_base_model(
        out_dir / "model",
        limo_examples=load_limo("synthetic", synthetic_count=16, seed=0, hub_split="train",
                                hub_revision=None).rows,
        financebench_examples=load_financebench("synthetic", synthetic_count=64, seed=0).rows,
        corpus_spec=ChatCorpusSpec(padded_fraction=0.7, max_padding_phrases=2,
                                   prompt_template=settings.financebench.user_template, seed=0),
        vocab_size=model.tiny_vocab_size,
        model_spec=TinyLlamaSpec(hidden_size=model.tiny_hidden_size,
                                 intermediate_size=model.tiny_intermediate_size,
                                 num_layers=model.tiny_layers, num_heads=model.tiny_heads,
                                 num_kv_heads=model.tiny_heads,
                                 max_seq_len=model.tiny_max_seq_len),
        train_spec=TrainSpec(steps=train_steps, batch_size=8, learning_rate=3e-3,
                             warmup_steps=0, weight_decay=0.0, seed=0),
        on_step=None, show_progress=False,
    )
    return report.model_dir


def build_backend(args, model_dir: Path):
    """The backend under test and the number of cluster ids of its table."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, Qwen2Config

    from crsp_ops.inference.transformers_backend import TransformersBackend
    from crsp_ops.steering.token_rules import eos_token_ids

    tokenizer = AutoTokenizer.from_pretrained(model_dir, local_files_only=True)
    if args.random_init:
        torch.manual_seed(0)
        dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
        model = AutoModelForCausalLM.from_config(Qwen2Config(**QWEN_LIKE), dtype=dtype)
    else:
        model = AutoModelForCausalLM.from_pretrained(model_dir, local_files_only=True)
    vocab = model.get_output_embeddings().weight.shape[0]
    table = np.random.default_rng(0).integers(0, args.n_clusters, size=vocab)
    # Stop only on the pad id, which the model never emits: every response then decodes
    # exactly max_new_tokens, so the measurement is decode throughput, not prompt prefill.
    stop_ids = [tokenizer.pad_token_id] if tokenizer.pad_token_id is not None else None
    backend = TransformersBackend(
        model, tokenizer, device=args.device, token_clusters=table, n_clusters=args.n_clusters,
        stop_token_ids=stop_ids or sorted(eos_token_ids(tokenizer, None)),
        batch_size=args.batch_size,
    )
    return backend, vocab, sum(p.numel() for p in model.parameters())


def conversations(template: str, count: int) -> list[list[dict]]:
    """FinanceBench prompts rendered with the tiny model's template."""
    from crsp_ops.data.financebench import load_financebench, render_question_prompt

    rows = load_financebench("synthetic", synthetic_count=count, seed=3).rows
    return [[{"role": "user", "content": render_question_prompt(row, template=template)}]
            for row in rows]


def timed(backend, prompts, params, deltas) -> tuple[int, float, list]:
    """Generate once; return (response tokens, seconds, token ids)."""
    import torch

    if backend.device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    completions = backend.generate(prompts, params, deltas=deltas)
    if backend.device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return sum(c.response_tokens for c in completions), seconds, [c.token_ids for c in completions]


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None,
                        help="HF model dir (default: models/base if built, else a tiny one)")
    parser.add_argument("--device", default="cpu", help="cpu | cuda[:N] | auto")
    parser.add_argument("--random-init", action="store_true",
                        help="random Qwen2-like ~0.5B model with a 151936 vocabulary")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--reps", type=int, default=30, help="interleaved repetitions per side")
    parser.add_argument("--n-clusters", type=int, default=12)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    parser.add_argument("--train-steps", type=int, default=30,
                        help="steps when the tiny model has to be built")
    return parser.parse_args()


def main() -> None:
    args = parse_args()

    import torch

    from crsp_ops.inference.completions import SamplingParams

    if args.threads:
        torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        settings = default_settings(Path(tmp))
        model_dir = Path(args.model) if args.model else REPO / "models" / "base"
        if not (model_dir / "config.json").is_file():
            model_dir = build_tiny_model(Path(tmp), settings, args.train_steps)
        backend, vocab, n_params = build_backend(args, model_dir)
    prompts = conversations(settings.financebench.user_template, args.prompts)
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=0.0, top_p=1.0)
    deltas = [0.5] * args.n_clusters  # uniform: every logit shifts alike, outputs unchanged
    timed(backend, prompts, params, None)  # warm-up (allocator, kernels, caches)
    timed(backend, prompts, params, deltas)
    pairs = interleaved(lambda: timed(backend, prompts, params, None),
                        lambda: timed(backend, prompts, params, deltas), args.reps)
    print(json.dumps(result(args, backend, model_dir, vocab, n_params, pairs)))


def result(args: argparse.Namespace, backend, model_dir: Path, vocab: int, n_params: int,
           pairs: list) -> dict:
    """The JSON line: steered / unsteered tokens per second, paired per repetition."""
    import torch

    # tokens/s ratio per repetition: (steered tokens / s) / (plain tokens / s)
    ratios = [(s_tok / s_sec) / (p_tok / p_sec) for (p_tok, p_sec, _), (s_tok, s_sec, _) in pairs]
    plain_tps = sum(p[0] for p, _ in pairs) / sum(p[1] for p, _ in pairs)
    steered_tps = sum(q[0] for _, q in pairs) / sum(q[1] for _, q in pairs)
    paired = summary(ratios)
    return {
        "benchmark": "processor_overhead",
        "backend": "transformers",
        "device": str(backend.device),
        "model": "qwen2-like-random-init" if args.random_init else str(model_dir.name),
        "parameters": n_params,
        "vocab_size": vocab,
        "n_clusters": args.n_clusters,
        "prompts": args.prompts,
        "batch_size": args.batch_size,
        "max_new_tokens": args.max_new_tokens,
        "reps": args.reps,
        "threads": torch.get_num_threads(),
        "tokens_per_rep": pairs[0][0][0],
        "unsteered_tokens_per_s": round(plain_tps, 2),
        "steered_tokens_per_s": round(steered_tps, 2),
        "ratio": paired["ratio"],
        "ci95": paired["ci95"],
        "ci95_half_width": paired["ci95_half_width"],
        "goal_ratio": 0.97,
        "outputs_identical": all(p[2] == q[2] for p, q in pairs),
        "python": platform.python_version(),
        "torch": torch.__version__,
    }


if __name__ == "__main__":
    main()
