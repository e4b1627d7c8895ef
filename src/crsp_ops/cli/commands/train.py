"""CRSP self-play training (TR-RPG or TRR++) of a causal LM; DVC stage and MLflow entry `train`.

Reads the model (``--model``; with ``--resume`` the newest checkpoint under ``--out``, or
``--resume CHECKPOINT`` that one; a longer ``train.steps`` extends a finished run) and the
LIMO rows of the ``limo`` stage (``--limo``; optional: without them math tasks are only the
built-in seeds), and writes the trained model, ``checkpoints/``, ``<out>.metrics.json`` and
``<out>.mlflow_run.json`` beside ``--out``. Every step's metrics go to the MLflow run.

Your own task (a ``prompt`` column plus any others; TRL-signature reward functions), from any
folder (outside a crsp_ops project: the packaged defaults, paths and ./mlflow.db in it):
    crsp-ops train --dataset data.jsonl --reward rewards.py:exact_match --out models/mine

Tiny CPU run:
    crsp-ops train --model models/base --out models/crsp --set train.steps=4
    accelerate launch --multi_gpu --num_processes 2 -m crsp_ops.cli train  # 2 CPU procs (gloo)
    accelerate launch --num_processes 8 --mixed_precision bf16 -m crsp_ops.cli train  # 8 GPUs
"""

from __future__ import annotations

import argparse
import logging
import sys
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import record_run
from crsp_ops.paths import CRSP_MODEL_DIR, LIMO_DIR, SEEDED_MODEL_DIR, working_root
from crsp_ops.tracking.progress import StepProgress
from crsp_ops.tracking.run_tags import run_name

HELP = "CRSP self-play training (propose/solve/critique, TR-RPG or TRR++)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``train`` arguments."""
    parser.add_argument("--model", default=str(SEEDED_MODEL_DIR),
                        help="HF model directory to train (the seed stage's output), or a Hub "
                             "id in the local Hugging Face cache (model.hub_download)")
    parser.add_argument("--out", default=str(CRSP_MODEL_DIR), help="output directory")
    parser.add_argument("--limo", default=str(LIMO_DIR), help="LIMO rows (file or directory)")
    parser.add_argument("--resume", dest="resume_from", nargs="?", const=True, default=None,
                        metavar="CHECKPOINT", help="continue from the newest checkpoint under "
                        "--out, or from CHECKPOINT (a longer train.steps extends the run)")
    parser.add_argument("--dataset", help="train on this JSONL/CSV/Parquet file or folder "
                        "(a 'prompt' column) instead of the built-in tasks (train.dataset)")
    parser.add_argument("--eval-dataset", help="held-out rows scored every train.eval_interval "
                        "steps (train.eval_dataset; default: train.eval_split_size rows of "
                        "--dataset)")
    parser.add_argument("--reward", action="append", default=[], metavar="SPEC[=WEIGHT]",
                        help="a reward function, path/to/file.py:function or "
                             "package.module:function (repeatable; replaces train.rewards)")


def dataset_overrides(args: argparse.Namespace) -> list[str]:
    """``--dataset``, ``--eval-dataset`` and ``--reward`` as ``train.*`` overrides.

    >>> dataset_overrides(argparse.Namespace(dataset="d.jsonl", eval_dataset=None,
    ...                                      reward=["r.py:f", "r.py:g=0.5"]))
    ['train.dataset=d.jsonl', 'train.rewards=r.py:f,r.py:g=0.5']
    """
    out = [f"train.dataset={args.dataset}"] if args.dataset else []
    if args.eval_dataset:
        out.append(f"train.eval_dataset={args.eval_dataset}")
    if args.reward:
        out.append(f"train.rewards={','.join(args.reward)}")
    return out


def run(args: argparse.Namespace) -> int:
    """Train and write the outputs; see the module docstring."""
    from crsp_ops.config import load_settings
    from crsp_ops.crsp.policy.accelerator import make_accelerator
    from crsp_ops.crsp.policy.precision import training_precision
    from crsp_ops.crsp.trainer.build import build_trainer
    from crsp_ops.crsp.trainer.options import epoch_budget
    from crsp_ops.crsp.user_task import load_dataset_tasks, log_inputs
    from crsp_ops.inference.hf_chat import checked_template_kwargs
    from crsp_ops.models.loading import load_causal_lm
    from crsp_ops.tracking import NullTracker, start_run

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    resolved = load_settings(working_root(), [*args.overrides, *dataset_overrides(args)])
    settings, root = resolved.settings, resolved.root
    out = root / args.out
    checkpoint, source, model_dir = starting_point(args, settings, root, out)
    precision = training_precision(  # an unsupported dtype stops here, before any run
        settings.model.dtype, settings.model.device, lora=settings.train.lora_rank > 0,
        mixed_precision=settings.train.mixed_precision)
    accelerator = make_accelerator(precision.mixed_precision, settings.model.device)
    user_task = load_dataset_tasks(settings.train, root, settings.crsp.seed) \
        if settings.train.dataset else None  # bad data or rewards fail here, before any run
    model, tokenizer = load_causal_lm(checkpoint or model_dir, dtype=precision.load_dtype)
    checked_template_kwargs(tokenizer, settings.generation.template_kwargs)  # before a run
    if user_task is not None:
        train_tasks, heldout_tasks, skipped_rows = user_task.train, user_task.heldout, 0
    else:
        train_tasks, heldout_tasks, skipped_rows = limo_math_tasks(settings, root / args.limo)
    settings = replace(settings, train=epoch_budget(settings.train, train_tasks,
                                                    accelerator.num_processes))
    name, tags = run_identity(settings, model_dir, checkpoint, heldout_tasks)
    tags.update({**precision.tags(model), **(source.tags() if source else {})})
    tracking = (start_run("train", resolved, run_name=name, tags=tags)
                if accelerator.is_main_process else nullcontext(NullTracker()))
    with tracking as run_tracker:
        tracker = StepProgress(run_tracker, total=settings.train.steps, desc="crsp train",
                               enabled=accelerator.is_main_process)
        if accelerator.is_main_process:
            record_run(out, tracker)
            tracker.log_metrics({"data_limo_skipped_rows": float(skipped_rows)}, step=0)
            log_inputs(tracker, user_task.inputs if user_task else ())
        trainer = build_trainer(
            settings, model, tokenizer, out_dir=out, tasks=train_tasks,
            heldout_tasks=heldout_tasks, rewards=user_task.rewards if user_task else None,
            tracker=tracker, accelerator=accelerator, checkpoint=checkpoint)
        trainer.train()
        gain = write_summary(trainer, tracker, out)
        tracker.close()
    print(f"trained {trainer.step} steps; model in {out}")
    if len(trainer.curve) >= 2:
        print(describe_curve(trainer.curve[0], trainer.curve[-1], gain))
    return 0


def starting_point(args: argparse.Namespace, settings, root: Path, out: Path):
    """``(checkpoint, model source, model directory)``: the checkpoint ``--resume`` names, if any.

    A ``--resume`` that names no checkpoint, or a ``--model`` that is not one, stops here in one
    line (exit 2), before any run; ``--resume`` with no checkpoint under ``--out`` starts afresh.
    """
    from crsp_ops.crsp.trainer.checkpoint import resume_target
    from crsp_ops.models.model_source import resolve_model

    resume = root / args.resume_from if isinstance(args.resume_from, str) else args.resume_from
    checkpoint = resume_target(out, resume)
    source = None if checkpoint else resolve_model(
        args.model, root, allow_download=settings.model.hub_download)
    if args.resume_from and checkpoint is None:
        print(f"--resume: no checkpoint under {out / 'checkpoints'}; starting from --model")
    return checkpoint, source, source.directory if source else root / args.model


def run_identity(settings, model_dir: Path, checkpoint: Path | None, heldout_tasks
                 ) -> tuple[str, dict[str, str]]:
    """The run's name and tags: ``train_run_tags`` and the configured model source."""
    from crsp_ops.crsp.trainer.run_identity import train_run_tags

    name = run_name("train", "crsp", settings.train.algorithm_name, settings.model.source,
                    f"{settings.train.steps}steps")
    tags = {**train_run_tags(settings, model_dir, checkpoint, heldout_tasks),
            "model.source": settings.model.source}
    return name, tags


def write_summary(trainer, tracker, out: Path):
    """``<out>.metrics.json`` (main process) and the paired held-out gain, when evaluated twice.

    Returns the gain (``paired_gain`` of the first and last evaluation) or ``None``.
    """
    from crsp_ops.atomic_io import atomic_write_json
    from crsp_ops.crsp.trainer.learning_curve import paired_gain

    gain = (paired_gain(trainer.heldout_verdicts[0], trainer.heldout_verdicts[-1])
            if len(trainer.heldout_verdicts) >= 2 else None)
    if trainer.accelerator.is_main_process:
        summary = {**trainer.run.last_metrics, **trainer.final_evaluation,
                   "steps": trainer.step}
        if gain is not None:  # the curve's first and last evaluation, task by task
            tracker.log_metrics(gain.metrics(), step=trainer.step)
            summary.update(gain.metrics())
        # beside the model directory: DVC tracks it as a metrics file of its own
        atomic_write_json(out.with_name(out.name + ".metrics.json"), summary)
    return gain


def describe_curve(before, after, gain=None) -> str:
    """The held-out solve rate before and after training, with 95% intervals, in one line.

    The mean total reward follows where the evaluation recorded it (a reward with partial credit
    can rise while the solve rate, rewards at ``train.success_threshold`` or above, stays). With
    ``gain`` (``paired_gain`` of the two evaluations) it ends with the paired difference
    and whether its interval is above 0.
    """
    def point(p) -> str:
        low, high = p.solve_rate_ci
        return (f"{p.solve_rate:.3f} [{low:.3f}, {high:.3f}] (well-formed {p.well_formed:.2f}, "
                f"correct among well-formed {p.solve_rate_well_formed:.3f})")
    line = (f"held-out solve rate ({after.tasks} tasks, greedy, 95% CI): step {before.step} "
            f"{point(before)} -> step {after.step} {point(after)}")
    if before.reward is not None and after.reward is not None:  # partial credit shows here
        line += (f"; mean reward {before.reward:.3f} [{before.reward_ci[0]:.3f}, "
                 f"{before.reward_ci[1]:.3f}] -> {after.reward:.3f} [{after.reward_ci[0]:.3f}, "
                 f"{after.reward_ci[1]:.3f}]")
    if gain is None:
        return line
    verdict = ("above 0: learned" if gain.low > 0 else
               "below 0: worse" if gain.high < 0 else "includes 0: no clear change")
    return (f"{line}; paired gain {gain.diff:+.3f} [{gain.low:+.3f}, {gain.high:+.3f}] "
            f"({verdict})")


def limo_math_tasks(settings, limo_path: Path):
    """(training, held-out) math tasks from the LIMO rows and the skipped-row count.

    Without rows (or without math tasks) both task lists are empty.
    """
    from crsp_ops.crsp.tasks.edge import edge_math_tasks
    from crsp_ops.crsp.tasks.limo import load_limo_result, math_tasks, split_heldout

    if "math" not in settings.crsp.problem_types:
        return [], [], 0
    if settings.crsp.math_source == "edge":
        return (*edge_math_tasks(settings.crsp), 0)
    try:
        result = load_limo_result("stage", limo_path, synthetic_count=settings.limo.n_synthetic,
                                  seed=settings.limo.seed, hub_split=settings.limo.hub_split)
    except FileNotFoundError as error:
        print(f"no LIMO rows ({error}); math tasks are the built-in starter tasks only")
        return [], [], 0
    train_rows, heldout_rows = split_heldout(list(result.rows), settings.crsp.heldout_math)
    return math_tasks(train_rows), math_tasks(heldout_rows), result.n_skipped


main = stage_main(sys.modules[__name__])
