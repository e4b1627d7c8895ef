"""The trainer from Python, as a TRL user writes it: a model, reward functions, a dataset.

    from crsp_ops.crsp.api import CRSPTrainer

    trainer = CRSPTrainer(model="models/base", reward_funcs=[my_reward],
                          train_dataset="data.jsonl", eval_dataset="test.jsonl",
                          args={"train.steps": 8, "train.learning_rate": 1e-5},
                          output_dir="models/mine")
    result = trainer.train()

``model`` is what TRL's ``GRPOTrainer`` takes: a model directory, a Hugging Face Hub id read
from the local cache (downloaded only with ``model.hub_download`` on and ``HF_HUB_OFFLINE``
unset), or a ``PreTrainedModel`` with its tokenizer as ``processing_class``. Relative paths are
the project's (inside a crsp_ops project) or the working directory's (anywhere else, where the
packaged defaults are the configuration and ``./mlflow.db`` the default MLflow store).
``reward_funcs`` are callables with TRL's signature or SPEC strings (``file.py:function``);
a dataset is a file or folder path, a ``datasets.Dataset`` or a list of row dicts (written to
``<output_dir>/data/`` first, so the run records the very rows it trained on). ``args`` takes
any configuration key (``crsp-ops config show`` lists them). The run is tracked as
``crsp-ops train`` tracks it (experiment ``crsp-train``), unless ``tracking.enabled`` is off.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from crsp_ops.atomic_io import atomic_write_jsonl
from crsp_ops.config import load_settings
from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.policy.precision import training_precision
from crsp_ops.crsp.rewards.functions import RewardFunction, load_reward_function
from crsp_ops.crsp.trainer.checkpoint import CHECKPOINTS, resume_target
from crsp_ops.crsp.trainer.loop import SelfPlayTrainer, TrainResult
from crsp_ops.crsp.trainer.options import SelfPlaySettings, epoch_budget
from crsp_ops.crsp.trainer.run_identity import train_run_tags
from crsp_ops.crsp.user_task import DatasetTasks, log_inputs, tasks_from_rows
from crsp_ops.data.prompt_dataset import PromptRows, load_prompt_rows
from crsp_ops.errors import DataError
from crsp_ops.models.loading import load_causal_lm
from crsp_ops.models.model_source import in_memory_source, resolve_model
from crsp_ops.paths import project_root, working_root
from crsp_ops.tracking import start_run

Dataset = str | Path | Sequence[Mapping[str, Any]] | Any  # a path, rows, or datasets.Dataset


def _rows(dataset: Dataset, output_dir: Path, name: str) -> PromptRows:
    """Read a path as it is; write in-memory rows to ``output_dir/data/<name>.jsonl`` first."""
    if isinstance(dataset, (str, Path)):
        return load_prompt_rows(dataset)
    rows = dataset.to_list() if hasattr(dataset, "to_list") else [dict(r) for r in dataset]
    return load_prompt_rows(atomic_write_jsonl(output_dir / "data" / f"{name}.jsonl", rows))


def _function(reward: RewardFunction | Callable[..., Any] | str, root: Path
              ) -> RewardFunction | Callable[..., Any]:
    return load_reward_function(reward, root) if isinstance(reward, str) else reward


class CRSPTrainer:
    """A CRSP trainer on a user's task (see the module docstring).

    Args:
        model: an HF model directory (or a ``model_ref.json`` directory), a Hub id in the local
            cache, or a ``PreTrainedModel`` (then ``processing_class`` is its tokenizer).
        reward_funcs: callables ``fn(prompts, completions, **columns)`` or SPEC strings.
        train_dataset: rows with a ``prompt`` column.
        eval_dataset: held-out rows; default ``train.eval_split_size`` rows of the training set.
        args: configuration overrides, ``{"train.steps": 8, ...}``.
        output_dir: the final model, checkpoints and ``learning_curve.json`` go here.
        project: the crsp_ops project directory (default: found from the working directory;
            outside any project, the working directory with the packaged defaults).
        processing_class: the tokenizer (TRL's name); default: the model's own.
        callbacks: ``TrainerCallback``s, or objects with some of its hooks (``on_step_end``,
            ``on_evaluate``, ``on_save``, ``on_train_end``), called with the step and metrics.
    """

    def __init__(self, model: str | Path | Any,
                 reward_funcs: Sequence[RewardFunction | Callable[..., Any] | str],
                 train_dataset: Dataset, eval_dataset: Dataset | None = None, *,
                 args: Mapping[str, Any] | None = None, output_dir: str | Path = "models/crsp-api",
                 project: str | Path | None = None, processing_class: Any = None,
                 callbacks: Sequence[Any] = ()) -> None:
        root = project_root(project) if project is not None else working_root()
        self.output_dir = root / output_dir
        train_rows = _rows(train_dataset, self.output_dir, "train")
        overrides = [f"train.dataset={train_rows.source}",  # train.preset=auto reads it
                     *(f"{key}={_text(value)}" for key, value in (args or {}).items())]
        self.resolved = load_settings(root, overrides)
        self.settings = self.resolved.settings
        self.model_source = (resolve_model(model, root,
                                           allow_download=self.settings.model.hub_download)
                             if isinstance(model, (str, Path)) else in_memory_source(model))
        self.model_dir = self.model_source.directory  # None for a model object
        self._model = None if self.model_dir is not None else model
        self.processing_class = processing_class
        if self._model is not None and processing_class is None:
            raise ValueError("a model object needs its tokenizer: pass processing_class=")
        self.task: DatasetTasks = tasks_from_rows(
            train_rows,
            _rows(eval_dataset, self.output_dir, "eval") if eval_dataset is not None else None,
            [_function(reward, root) for reward in reward_funcs], self.settings.train,
            self.settings.crsp.seed)
        self.trainer: SelfPlayTrainer | None = None
        self.callbacks = list(callbacks)

    def train(self, resume_from_checkpoint: bool | str | Path | None = None) -> TrainResult:
        """Train up to ``train.steps`` steps in one tracked run; return what was done.

        Args:
            resume_from_checkpoint: ``True``: continue from the latest checkpoint under
                ``output_dir``; a path: from that checkpoint. A longer ``train.steps`` than the
                checkpoint's run extends it (the schedules are recomputed for the new total).

        ``self.trainer`` is the trainer afterwards (its ``curve`` holds the held-out points).

        Raises:
            DataError: the checkpoint is not one, or ``True`` finds none (before any run).
        """
        settings = self.settings
        checkpoint = resume_target(self.output_dir, resume_from_checkpoint)
        if resume_from_checkpoint is True and checkpoint is None:
            raise DataError(f"resume_from_checkpoint=True: no checkpoint under "
                            f"{self.output_dir / CHECKPOINTS}")
        precision = training_precision(settings.model.dtype, "auto",  # the trainer's device
                                       lora=settings.train.lora_rank > 0,
                                       mixed_precision=settings.train.mixed_precision)
        model, tokenizer = ((self._model, None) if self._model is not None and checkpoint is None
                            else load_causal_lm(checkpoint or self.model_dir,
                                                dtype=precision.load_dtype))
        tokenizer = self.processing_class or tokenizer
        name = Path(self.model_source.name).name
        accelerator = make_accelerator(precision.mixed_precision, "auto")
        # train.num_epochs counted into steps once, as the CLI does, for the tags and the run
        settings = replace(settings, train=epoch_budget(settings.train, self.task.train,
                                                        accelerator.num_processes))
        tags = {"crsp.api": "CRSPTrainer", **precision.tags(model), **self.model_source.tags(),
                **train_run_tags(settings, self.model_dir, checkpoint, self.task.heldout)}
        with start_run("train", self.resolved, run_name=f"train-api-{name}",
                       tags=tags) as tracker:
            log_inputs(tracker, self.task.inputs)
            self.trainer = SelfPlayTrainer(
                model, tokenizer, SelfPlaySettings(settings.crsp, settings.reward,
                                                   settings.train, settings.generation),
                out_dir=self.output_dir, tasks=self.task.train,
                heldout_tasks=self.task.heldout, rewards=self.task.rewards, tracker=tracker,
                accelerator=accelerator, callbacks=self.callbacks)
            if checkpoint is not None:
                self.trainer.resume(checkpoint)
            return self.trainer.train()


def _text(value: Any) -> str:
    """A configuration value as ``--set`` spells it (lists comma-separated, bools y/n).

    >>> _text(True), _text(["a", "b"]), _text(1e-5)
    ('y', 'a,b', '1e-05')
    """
    if isinstance(value, bool):
        return "y" if value else "n"
    if isinstance(value, (list, tuple)):
        return ",".join(map(str, value))
    return str(value)
