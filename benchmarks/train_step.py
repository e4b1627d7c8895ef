"""CRSP self-play step time and tokens/s; prints one JSON line.

    python benchmarks/train_step.py --model models/base --steps 3            # tiny model, CPU
    python benchmarks/train_step.py --model models/base --device cuda --random-init-0.5b \
        --mixed-precision bf16                                               # GPU (untested)

Each measured step is a full self-play step (propose, sandbox validation, solve, critique,
creativity grading, update) with the in-process backend; the first step is a warm-up and is
not counted. Where TRL can be imported, its GRPOTrainer step on the same model and batch
would be timed beside it; here TRL is reported as unavailable (it is not a dependency).
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


def trl_comparison() -> dict:
    try:
        import trl  # noqa: F401
    except ImportError:
        return {"trl": "unavailable", "trl_step_s": None, "crsp_vs_trl_step_ratio": None}
    # TRL's GRPOTrainer needs a dataset and reward function wired to the same batch; not
    # measured in this environment (TRL is not a project dependency).
    return {"trl": "importable (comparison not implemented)", "trl_step_s": None,
            "crsp_vs_trl_step_ratio": None}


def main(argv=None) -> int:
    args = parse_args(argv)
    from crsp_ops.config import load_settings
    from crsp_ops.crsp.selfplay_trainer import (
        SelfPlaySettings,
        SelfPlayTrainer,
        make_accelerator,
    )

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
        **trl_comparison(),
    }
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
