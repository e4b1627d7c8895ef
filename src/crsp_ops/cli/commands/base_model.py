"""Build the base model stage: ``models/base/`` (a standard Hugging Face model directory).

    crsp-ops base-model                                     # train the tiny model (~1 min, CPU)
    crsp-ops base-model --set model.tiny_train_steps=100    # a quicker, weaker one
    crsp-ops base-model --set model.source=/models/Qwen2.5-0.5B-Instruct   # validate + record
    crsp-ops base-model --set model.source=smollm2    # record models/converted (convert-model)

The tiny model (a byte-level BPE tokenizer with a chat template, and a small Llama) is trained
on a synthetic chat corpus built from the LIMO rows and the FinanceBench pool, where answers
come terse or padded with filler, so steering has real verbosity to remove. The loss of every
step goes to MLflow (experiment ``crsp-base-model``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import record_run, settings_from
from crsp_ops.paths import BASE_MODEL_DIR, CONVERTED_MODEL_DIR, FINANCEBENCH_DIR, LIMO_DIR

HELP = "train the tiny base model (or validate an HF model dir) -> models/base/"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``base-model`` arguments."""
    parser.add_argument("--limo", type=Path, default=LIMO_DIR, help="LIMO stage output")
    parser.add_argument(
        "--financebench", type=Path, default=FINANCEBENCH_DIR, help="FinanceBench stage output"
    )
    parser.add_argument("--converted", type=Path, default=CONVERTED_MODEL_DIR,
                        help="convert-model stage output (packaged GGUF profiles)")
    parser.add_argument("--out", type=Path, default=BASE_MODEL_DIR, help="output directory")


def run(args: argparse.Namespace) -> int:
    """Train (or validate) the base model and record it, with its MLflow run."""
    from crsp_ops.models.gguf_convert import PACKAGED_MODELS
    from crsp_ops.tracking import start_run

    resolved = settings_from(args)
    model = resolved.settings.model
    with start_run("base-model", resolved, run_name=f"base-model-{model.source}") as tracker:
        if model.source == "tiny":
            summary = _train_tiny(args, resolved.settings, tracker)
        elif model.source in PACKAGED_MODELS:
            summary = _record_converted(args, resolved.root / args.converted, model.source)
        else:
            summary = _record_existing(args, model.source)
        tracker.log_dict(summary, "base_model/summary.json")
        record_run(args.out, tracker)
    print("base-model: " + ", ".join(f"{k}={v}" for k, v in summary.items()))
    return 0


def _train_tiny(args: argparse.Namespace, settings, tracker) -> dict:
    import torch

    from crsp_ops.data.financebench import load_financebench
    from crsp_ops.data.limo import load_limo
    from crsp_ops.inference.transformers_backend import resolve_device
    from crsp_ops.models.tiny_base_model import build_tiny_base_model

    model = settings.model
    device = resolve_device(model.device)  # a clear error when cuda is asked for but missing
    if device.type != "cpu":
        print(f"base-model: the tiny model trains on the CPU; ignoring device {device}")
    limo = load_limo(
        str(args.limo / "limo.jsonl"), synthetic_count=1, seed=0, hub_split="", hub_revision=None
    )
    pool = load_financebench(str(args.financebench / "pool.jsonl"), synthetic_count=1, seed=0)
    tracker.log_metrics({"data_limo_skipped_rows": float(limo.n_skipped),
                         "data_pool_skipped_rows": float(pool.n_skipped)}, step=0)
    torch.manual_seed(model.tiny_seed)
    report = build_tiny_base_model(
        args.out,
        limo_examples=limo.rows,
        financebench_examples=pool.rows,
        corpus_spec=_corpus_spec(settings),
        vocab_size=model.tiny_vocab_size,
        model_spec=_model_spec(model),
        train_spec=_train_spec(model),
        on_step=lambda step, metrics: tracker.log_metrics(metrics, step=step),
        show_progress=True,
        extra_samples=_solve_samples(settings),
    )
    summary = {
        "model_dir": str(report.model_dir),
        "parameters": report.num_parameters,
        "vocab_size": report.vocab_size,
        "train_conversations": report.num_samples,
        "too_long_conversations": report.num_too_long,
        "final_loss": round(report.train.final_loss, 4),
        "train_seconds": round(report.train.seconds, 1),
    }
    tracker.log_metrics({"parameters": report.num_parameters, "final_loss": summary["final_loss"]},
                        step=model.tiny_train_steps)
    return summary


def _corpus_spec(settings):
    """The tiny model's chat corpus mix, from ``model.tiny_*`` and the FinanceBench template."""
    from crsp_ops.models.chat_corpus import ChatCorpusSpec

    model = settings.model
    return ChatCorpusSpec(
        padded_fraction=model.tiny_padded_fraction,
        max_padding_phrases=model.tiny_max_padding_phrases,
        prompt_template=settings.financebench.user_template,
        seed=model.tiny_seed,
        quote_evidence=model.tiny_quote_evidence,
    )


def _model_spec(model):
    """The tiny Llama's dimensions, from ``model.tiny_*``."""
    from crsp_ops.models.tiny_llama import TinyLlamaSpec

    return TinyLlamaSpec(
        hidden_size=model.tiny_hidden_size,
        intermediate_size=model.tiny_intermediate_size,
        num_layers=model.tiny_layers,
        num_heads=model.tiny_heads,
        num_kv_heads=model.tiny_kv_heads,
        max_seq_len=model.tiny_max_seq_len,
    )


def _train_spec(model):
    """The tiny model's optimisation settings, from ``model.tiny_*``."""
    from crsp_ops.models.tiny_llama import TrainSpec

    return TrainSpec(
        steps=model.tiny_train_steps,
        batch_size=model.tiny_batch_size,
        learning_rate=model.tiny_learning_rate,
        warmup_steps=model.tiny_warmup_steps,
        weight_decay=model.tiny_weight_decay,
        seed=model.tiny_seed,
    )


def _solve_samples(settings) -> list:
    """``model.tiny_solve_examples`` worked edge-math answers in the solver's format.

    Drawn from their own seed at ``crsp.edge_difficulty``; the held-out questions of
    ``crsp.seed`` are left out, so the train stage's held-out solve rate is on unseen questions.
    """
    from crsp_ops.crsp.tasks import solve_messages
    from crsp_ops.crsp.tasks.edge import edge_math_tasks
    from crsp_ops.crsp.tasks.task_types import MathTask
    from crsp_ops.data.edge_math import generate_edge_examples
    from crsp_ops.models.solve_corpus import exclude_questions, solve_samples

    count = settings.model.tiny_solve_examples
    if not count:
        return []
    _, heldout = edge_math_tasks(settings.crsp)
    problems = generate_edge_examples(count=count,
                                      seed=SOLVE_CORPUS_SEED + settings.model.tiny_seed,
                                      difficulty=settings.crsp.edge_difficulty)
    problems = exclude_questions(problems, {task.question for task in heldout})
    return solve_samples(problems, render=lambda question: solve_messages(
        MathTask(question, "", "")), seed=settings.model.tiny_seed)


SOLVE_CORPUS_SEED = 7_000_001  # + model.tiny_seed: apart from crsp.seed's training/held-out seeds


def _record_existing(args: argparse.Namespace, source: str) -> dict:
    from crsp_ops.models.fingerprint import tokenizer_sha256, weights_sha256
    from crsp_ops.models.hf_model_dir import validate_hf_model_dir
    from crsp_ops.models.model_ref import write_model_ref

    info = validate_hf_model_dir(source)
    summary = {
        "model_dir": str(info.path),
        "name": info.path.name,
        "model_type": info.model_type,
        "vocab_size": info.vocab_size,
        "eos_token_ids": list(info.eos_token_ids),
        "weights_sha256": weights_sha256(info.path),
        "tokenizer_sha256": tokenizer_sha256(info.path),
    }
    write_model_ref(args.out, info.path, summary)
    return summary


def _record_converted(args: argparse.Namespace, converted: Path, profile: str) -> dict:
    """Point at the converted profile model (relative: the project stays portable)."""
    from crsp_ops.models.fingerprint import tokenizer_sha256
    from crsp_ops.models.gguf_convert import CONVERSION_FILE
    from crsp_ops.models.hf_model_dir import validate_hf_model_dir
    from crsp_ops.models.model_ref import write_model_ref

    manifest_path = converted / CONVERSION_FILE
    if not manifest_path.is_file():
        raise FileNotFoundError(
            f"model.source={profile}: {manifest_path} is missing; run `crsp-ops convert-model` "
            "(or `dvc repro convert_model`) first"
        )
    manifest = json.loads(manifest_path.read_text())
    if manifest.get("profile") != profile:
        raise ValueError(f"{converted} holds profile {manifest.get('profile')!r}, not {profile!r}: "
                         "run `crsp-ops convert-model` again")
    info = validate_hf_model_dir(converted)
    summary = {
        "model_dir": str(converted),
        "name": profile,
        "model_type": info.model_type,
        "vocab_size": info.vocab_size,
        "eos_token_ids": list(info.eos_token_ids),
        "weights_sha256": manifest["gguf_sha256"],  # the converted weights are a function of it
        "tokenizer_sha256": tokenizer_sha256(info.path),
        "license": manifest.get("license", ""),
    }
    write_model_ref(args.out, info.path, summary, relative=True)
    return summary


main = stage_main(sys.modules[__name__])
