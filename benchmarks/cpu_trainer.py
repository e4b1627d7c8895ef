"""A measurement over a CPU trainer built by the one builder, closed whatever happens."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence

from crsp_ops.config import load_settings
from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.models.loading import load_causal_lm
from crsp_ops.paths import project_root


def measure_with_trainer(model_path: str, overrides: Sequence[str],
                         measure: Callable[..., dict]) -> dict:
    """``measure(settings, trainer)`` on a trainer of ``model_path`` with ``overrides`` set."""
    settings = load_settings(project_root(), list(overrides)).settings
    model, tokenizer = load_causal_lm(model_path)
    with tempfile.TemporaryDirectory() as out:
        trainer = build_trainer(settings, model, tokenizer, out_dir=out,
                                accelerator=make_accelerator("no", "cpu"))
        try:
            return measure(settings, trainer)
        finally:
            trainer.close()
