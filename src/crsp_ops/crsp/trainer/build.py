"""The one way a ``SelfPlayTrainer`` is assembled, from the resolved settings.

``crsp-ops train``, ``CRSPTrainer`` and every benchmark call ``build_trainer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from crsp_ops.config.sections import Settings
from crsp_ops.crsp.rewards.solve import RewardSet
from crsp_ops.crsp.tasks.task_types import Task
from crsp_ops.crsp.trainer.loop import SelfPlayTrainer
from crsp_ops.crsp.trainer.options import SelfPlaySettings
from crsp_ops.tracking import Tracker


def build_trainer(settings: Settings, model: Any, tokenizer: Any, *, out_dir: str | Path,
                  tasks: Sequence[Task] = (), heldout_tasks: Sequence[Task] = (),
                  rewards: RewardSet | None = None, tracker: Tracker | None = None,
                  accelerator: Any = None, generation: Any = None, callbacks: Sequence = (),
                  args: Any = None, buffers: Any = None,
                  checkpoint: str | Path | None = None) -> SelfPlayTrainer:
    """A trainer of ``model`` on the resolved ``settings``, resumed from ``checkpoint`` if given.

    The keyword arguments are ``SelfPlayTrainer``'s (see there).
    """
    trainer = SelfPlayTrainer(
        model, tokenizer, SelfPlaySettings(settings.crsp, settings.reward, settings.train,
                                           settings.generation),
        out_dir=out_dir, tasks=tasks, heldout_tasks=heldout_tasks, rewards=rewards,
        tracker=tracker, accelerator=accelerator, generation=generation, callbacks=callbacks,
        args=args, buffers=buffers)
    if checkpoint is not None:
        trainer.resume(checkpoint)
    return trainer
