"""LIMO trajectory seeding (SFT before self-play); DVC stage and MLflow entry `seed`.

Loss ``−E[log π(s|q) + α·log π(a|q,s)]`` on assistant tokens only
(``crsp_ops.crsp.selfplay.seeding``).
With ``seeding.enabled=n`` the base model is written unchanged, so ``--out`` always holds the
model self-play starts from. With ``crsp.math_source=limo`` the last ``crsp.heldout_math`` LIMO
rows (the held-out evaluation's) are never trained on.

Tiny CPU run:
    crsp-ops seed --model models/base --limo data/limo --out models/seeded \
        --set seeding.enabled=y --set seeding.steps=50
"""

from __future__ import annotations

import argparse
import json
import sys

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import record_run
from crsp_ops.paths import BASE_MODEL_DIR, LIMO_DIR, SEEDED_MODEL_DIR
from crsp_ops.tracking.run_tags import run_name

HELP = "LIMO trajectory seeding: SFT of the base model before self-play"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``seed`` arguments."""
    parser.add_argument("--model", default=str(BASE_MODEL_DIR), help="HF model directory to seed")
    parser.add_argument("--limo", default=str(LIMO_DIR), help="LIMO rows (file or directory)")
    parser.add_argument("--out", default=str(SEEDED_MODEL_DIR), help="output model directory")


def run(args: argparse.Namespace) -> int:
    """Seed (or copy) the model and record its MLflow run beside it."""
    from crsp_ops.config import load_settings
    from crsp_ops.crsp.policy.accelerator import make_accelerator
    from crsp_ops.crsp.policy.precision import training_precision
    from crsp_ops.crsp.selfplay.seeding import run_seeding
    from crsp_ops.crsp.tasks.limo import load_limo_result, split_heldout
    from crsp_ops.inference.hf_chat import checked_template_kwargs
    from crsp_ops.models.loading import load_causal_lm
    from crsp_ops.paths import project_root
    from crsp_ops.tracking import start_run

    resolved = load_settings(project_root(), args.overrides)
    settings, root = resolved.settings, resolved.root
    seeding, out = settings.seeding, root / args.out
    # seeding is full fine-tuning: fp32 weights, model.dtype's compute (precision module)
    precision = training_precision(settings.model.dtype, settings.model.device)
    model, tokenizer = load_causal_lm(root / args.model, dtype=precision.load_dtype)
    kwargs = checked_template_kwargs(  # a key the template ignores stops before a run
        tokenizer, settings.generation.template_kwargs)
    name = run_name("seed", "limo", settings.model.source,
                    f"{seeding.steps}steps" if seeding.enabled else "off")
    with start_run("seed", resolved, run_name=name,
                   tags={"crsp.seeding": str(seeding.enabled), **precision.tags(model)}
                   ) as tracker:
        record_run(out, tracker)
        summary = {"enabled": seeding.enabled, "steps": 0}
        if seeding.enabled:
            rows = load_limo_result(seeding.dataset_source, root / args.limo,
                                    synthetic_count=settings.limo.n_synthetic,
                                    seed=settings.limo.seed, hub_split=settings.limo.hub_split)
            tracker.log_metrics({"data_limo_skipped_rows": float(rows.n_skipped)}, step=0)
            # LIMO rows are held out only where the evaluation solves them (math_source=limo)
            heldout = settings.crsp.heldout_math if settings.crsp.math_source == "limo" else 0
            train_rows, _ = split_heldout(list(rows.rows), heldout)
            result = run_seeding(
                model, tokenizer, train_rows, steps=seeding.steps,
                learning_rate=seeding.learning_rate, batch_size=seeding.batch_size,
                alpha=seeding.alpha, max_seq_len=seeding.max_seq_len, seed=settings.crsp.seed,
                chat_template_kwargs=kwargs,
                accelerator=make_accelerator(precision.mixed_precision, settings.model.device),
                on_step=lambda step, metrics: tracker.log_metrics(
                    {f"seed/{k}": v for k, v in metrics.items()}, step=step))
            summary.update(steps=result.steps, final_loss=result.final_loss,
                           examples=result.examples, skipped=result.skipped)
        else:
            print("seeding.enabled=n: writing the base model unchanged")
        model.save_pretrained(out)
        tokenizer.save_pretrained(out)
        (out / "seeding_summary.json").write_text(json.dumps(summary, indent=2))
    print(f"seeded model in {out}: {summary}")
    return 0


main = stage_main(sys.modules[__name__])
