"""The tags of a train run, from ``crsp-ops train`` or ``CRSPTrainer`` alike.

Algorithm, budget and seed, the checkpoint it resumed, and the comparison keys
(``models.comparison_keys``): the base model it starts from (by content hash) and the
held-out tasks it is scored on, so runs of either road are filtered and compared on one basis.
A model object has no files to hash: its run carries the held-out keys alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsp_ops.models.comparison_keys import comparison_tags
from crsp_ops.models.model_ref import resolve_model_dir


def train_run_tags(settings: Any, base: Path | None, checkpoint: Path | None,
                   heldout_tasks: Sequence[Any]) -> dict[str, str]:
    """Tags of a run of ``settings`` (its budget already counted from epochs) from ``base``.

    ``base`` is the model directory the run starts from (``None``: a model object). Resumed
    without the base model at hand, the checkpoint that was loaded stands in for it.
    """
    if checkpoint is not None and base is not None and not (
            Path(resolve_model_dir(base)) / "config.json").is_file():
        base = checkpoint
    return {"crsp.algorithm": settings.train.algorithm_name,
            "crsp.resumed_from": str(checkpoint or ""),
            **comparison_tags(base, heldout_rows=heldout_tasks),
            "budget.steps": str(settings.train.steps), "seed": str(settings.crsp.seed)}
