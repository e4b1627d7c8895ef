"""``CRSPTrainer``: TRL's ``GRPOTrainer`` signature over the CRSP loop; switch by one import.

    from crsp_ops import CRSPTrainer          # was: from trl import GRPOTrainer

``args`` is a ``CRSPConfig``, a ``trl.GRPOConfig`` or a dict; everything is checked before
anything is written.

Design: docs/design/trainer.md#api.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from transformers import TrainerState

from crsp_ops.config import load_settings
from crsp_ops.config.trl_fields import TrlFieldError
from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.policy.precision import training_precision
from crsp_ops.crsp.rewards.functions import RewardFunction, load_reward_function
from crsp_ops.crsp.trainer.arguments import ResolvedArgs, resolve_args, trl_differences
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.crsp.trainer.checkpoint import CHECKPOINTS, resume_target
from crsp_ops.crsp.trainer.hf_flow import eval_metrics
from crsp_ops.crsp.trainer.hub import push_folder
from crsp_ops.crsp.trainer.options import epoch_budget
from crsp_ops.crsp.trainer.run_identity import train_run_tags
from crsp_ops.crsp.trainer.user_rows import (
    EvalSets,
    MemoryRows,
    lora_overrides,
    read_rows,
    write_rows,
)
from crsp_ops.crsp.user_task import (
    DatasetTasks,
    log_inputs,
    prompt_tasks,
    reward_name,
    tasks_from_rows,
)
from crsp_ops.errors import DataError
from crsp_ops.models.loading import load_causal_lm
from crsp_ops.models.model_source import in_memory_source, resolve_model
from crsp_ops.paths import project_root, working_root
from crsp_ops.tracking import start_run

logger = logging.getLogger(__name__)
Reward = RewardFunction | Callable[..., Any] | str


def reward_list(reward_funcs: Reward | Sequence[Reward], root: Path
                ) -> list[RewardFunction | Callable[..., Any]]:
    """``reward_funcs`` as TRL takes them: one callable or SPEC, or a list of them.

    Raises:
        TypeError: a reward model or another object (crsp_ops takes callables and SPECs).
    """
    funcs = [reward_funcs] if callable(reward_funcs) or isinstance(reward_funcs, str) \
        else list(reward_funcs)
    for func in funcs:
        if not (callable(func) or isinstance(func, str)) or hasattr(func, "config"):
            raise TypeError(f"reward_funcs: {type(func).__name__} is not a reward function; "
                            f"pass callables fn(prompts, completions, **columns) or "
                            f"'file.py:function' SPECs (reward models are not supported)")
    return [load_reward_function(f, root) if isinstance(f, str) else f for f in funcs]


class CRSPTrainer:
    """A CRSP trainer with ``trl.GRPOTrainer``'s arguments (design: docs/design/trainer.md#api).

    Args:
        model: an HF model directory, a Hub id in the local cache, or a ``PreTrainedModel``
            (then ``processing_class`` is its tokenizer).
        reward_funcs: a callable ``fn(prompts, completions, **columns)``, a SPEC string
            (``file.py:function``), or a list of them.
        args: ``CRSPConfig``, ``trl.GRPOConfig`` or a dict (crsp_ops keys, TRL names).
        train_dataset: rows with a ``prompt`` column: a path, a ``datasets.Dataset`` or a
            list of dicts (written to ``<output_dir>/data/train.jsonl`` when training starts).
        eval_dataset: held-out rows like ``train_dataset``, or a dict of such sets (each its
            own ``eval_<name>_`` metrics); default ``train.eval_split_size`` training rows.
        processing_class: the tokenizer; default: the model's own.
        callbacks: ``transformers.TrainerCallback`` instances or classes.
        peft_config: a ``peft.LoraConfig`` (its rank, alpha, dropout and target modules).
        project: the crsp_ops project directory (default: found from the working directory;
            outside any project, the working directory with the packaged defaults).

    Raises:
        TrlFieldError: a TRL field crsp_ops cannot honour (one line, nothing written).
        DataError: rows without what the trainer needs; the message names the argument.
        TypeError: an argument of a kind crsp_ops does not take.
    """

    def __init__(self, model: str | Path | Any, reward_funcs: Reward | Sequence[Reward],
                 args: Any = None, train_dataset: Any = None, eval_dataset: Any = None,
                 processing_class: Any = None, reward_processing_classes: Any = None,
                 callbacks: Sequence[Any] | None = None, optimizers: tuple = (None, None),
                 peft_config: Any = None, *, project: str | Path | None = None) -> None:
        if reward_processing_classes is not None or tuple(optimizers) != (None, None):
            raise TypeError("reward_processing_classes and optimizers have no crsp_ops "
                            "equivalent (callable rewards; AdamW from args)")
        if train_dataset is None:
            raise DataError("train_dataset: crsp_ops trains on a dataset with a 'prompt' column")
        root = project_root(project) if project is not None else working_root()
        base = load_settings(root, ["train.dataset=rows.jsonl"]).settings.train  # dataset preset
        self.resolved_args: ResolvedArgs = resolve_args(args, {
            "num_generations": base.solver_samples, "max_steps": base.steps,
            "max_completion_length": base.max_new_tokens_solve})
        self.args = self.resolved_args.hf
        self.root, self.output_dir = root, root / str(self.args.output_dir)
        self._train_rows = read_rows(train_dataset, self.output_dir, "train", "train_dataset")
        self._eval = EvalSets.read(eval_dataset, self.output_dir)
        overrides = {**self.resolved_args.overrides, **lora_overrides(peft_config)}
        self.resolved = load_settings(root, [
            f"train.dataset={self._train_rows.rows.source}",
            *(f"{key}={_text(value)}" for key, value in overrides.items())])
        self.settings = self.resolved.settings
        self._set_keys = set(overrides)
        self.model_source = (resolve_model(model, root,
                                           allow_download=self.settings.model.hub_download)
                             if isinstance(model, (str, Path)) else in_memory_source(model))
        self.model_dir = self.model_source.directory  # None for a model object
        self._model = None if self.model_dir is not None else model
        self.processing_class = processing_class
        if self._model is not None and processing_class is None:
            raise TypeError("a model object needs its tokenizer: pass processing_class=")
        functions = _weighted(reward_list(reward_funcs, root), self.resolved_args)
        self.task: DatasetTasks = tasks_from_rows(
            self._train_rows.rows, self._eval.first, functions, self.settings.train,
            self.settings.crsp.seed)
        self._eval.check(self.task.rewards)
        self.trainer = None
        self.callbacks = list(callbacks or [])

    @property
    def state(self) -> Any:
        """The ``transformers.TrainerState`` of the last ``train()`` (``log_history`` etc.)."""
        if self.trainer is None:
            return TrainerState()
        return self.trainer.state

    def differences(self) -> dict[str, tuple[Any, Any]]:
        """``{key: (crsp_ops value, TRL's)}``: the defaults kept that TRL's differ from."""
        values = {f"{section}.{name}": value for section in ("train", "generation", "crsp")
                  for name, value in vars(getattr(self.settings, section)).items()}
        return trl_differences(values, self._set_keys)

    def train(self, resume_from_checkpoint: bool | str | Path | None = None) -> Any:
        """Train up to ``max_steps`` (``train.steps``) in one tracked run.

        Args:
            resume_from_checkpoint: ``True``: from the latest checkpoint under
                ``output_dir``; a path: from that checkpoint. A longer budget extends the run.

        Returns:
            transformers' ``TrainOutput`` (``global_step``, ``training_loss``, ``metrics``).

        Raises:
            DataError: the checkpoint is not one, or ``True`` finds none (before any run).
        """
        settings = self.settings
        checkpoint = resume_target(self.output_dir, resume_from_checkpoint)
        if resume_from_checkpoint is True and checkpoint is None:
            raise DataError(f"resume_from_checkpoint=True: no checkpoint under "
                            f"{self.output_dir / CHECKPOINTS}")
        precision = training_precision(settings.model.dtype, settings.model.device,
                                       lora=settings.train.lora_rank > 0,
                                       mixed_precision=settings.train.mixed_precision)
        model, tokenizer = ((self._model, None) if self._model is not None and checkpoint is None
                            else load_causal_lm(checkpoint or self.model_dir,
                                                dtype=precision.load_dtype))
        tokenizer = self.processing_class or tokenizer
        accelerator = make_accelerator(precision.mixed_precision, settings.model.device)
        settings = replace(settings, train=epoch_budget(settings.train, self.task.train,
                                                        accelerator.num_processes))
        differences = self.differences()
        _announce(differences)
        write_rows(self._train_rows, *self._eval.memory)
        tags = {"crsp.api": "CRSPTrainer", "crsp.args": self.resolved_args.kind,
                **precision.tags(model), **self.model_source.tags(),
                **train_run_tags(settings, self.model_dir, checkpoint, self.task.heldout)}
        name = getattr(self.args, "run_name", None) or \
            f"train-api-{Path(self.model_source.name).name}"
        with start_run("train", self.resolved, run_name=name, tags=tags) as tracker:
            tracker.log_params({f"trl_default/{key}": f"crsp_ops={ours!r} trl={theirs!r}"
                                for key, (ours, theirs) in differences.items()})
            log_inputs(tracker, self.task.inputs)
            self.trainer = build_trainer(
                settings, model, tokenizer, out_dir=self.output_dir, tasks=self.task.train,
                heldout_tasks=self.task.heldout, rewards=self.task.rewards, tracker=tracker,
                accelerator=accelerator, callbacks=self.callbacks, args=self.args,
                checkpoint=checkpoint)
            output = self.trainer.train()
        if getattr(self.args, "push_to_hub", False):
            self.push_to_hub()
        return output

    def evaluate(self, eval_dataset: Any = None, metric_key_prefix: str = "eval"
                 ) -> dict[str, float]:
        """Greedy held-out scores as transformers names them (``eval_reward``, ...).

        ``eval_dataset``: rows, or a dict of sets (each ``<prefix>_<name>_...``); default the
        trainer's own eval set(s). Runs after ``train()`` on the trained model.

        Raises:
            DataError: no ``train()`` yet, or rows without what the rewards need.
        """
        if self.trainer is None:
            raise DataError("evaluate(): call train() first (the policy is built there)")
        sets = EvalSets.read(eval_dataset, self.output_dir) if eval_dataset is not None \
            else self._eval
        sets.check(self.task.rewards)
        named = sets.named or {"": self.task.heldout}
        out: dict[str, float] = {}
        for set_name, rows in named.items():
            tasks = rows if set_name == "" and rows is self.task.heldout \
                else prompt_tasks(rows.rows.rows)
            prefix = f"{metric_key_prefix}_{set_name}" if set_name else metric_key_prefix
            out.update(eval_metrics(self.trainer.evaluate_tasks(tasks), prefix))
        return out

    def save_model(self, output_dir: str | Path | None = None) -> Path:
        """Save the trained model as TRL does: the adapter under LoRA, else the full model.

        A relative ``output_dir`` is the project's, as ``args.output_dir`` is.
        """
        if self.trainer is None:
            raise DataError("save_model(): call train() first")
        out = self.root / output_dir if output_dir is not None else self.output_dir
        model = self.trainer.parts.unwrapped
        if hasattr(model, "peft_config"):
            model.save_pretrained(out)
            self.trainer.tokenizer.save_pretrained(out)
            return out
        return self.trainer.save_model(out)

    def push_to_hub(self, commit_message: str = "End of training", **kwargs: Any) -> str:
        """Upload ``output_dir`` to ``args.hub_model_id`` on the configured Hub.

        Raises:
            DataError: offline (``HF_HUB_OFFLINE``) or the Hub refused (one line).
        """
        return push_folder(self.output_dir, getattr(self.args, "hub_model_id", None)
                           or self.output_dir.name, token=getattr(self.args, "hub_token", None),
                           private=getattr(self.args, "hub_private_repo", None),
                           message=commit_message)


def _weighted(functions: list[Any], resolved: ResolvedArgs) -> list[Any]:
    """Apply TRL's ``reward_weights`` (one weight per function)."""
    weights = resolved.set_fields.get("reward_weights") or getattr(resolved.hf,
                                                                   "reward_weights", None)
    if not weights:
        return functions
    if len(weights) != len(functions):
        raise TrlFieldError(f"reward_weights has {len(weights)} weights for {len(functions)} "
                            f"reward functions")
    return [RewardFunction(f.name if isinstance(f, RewardFunction) else reward_name(f),
                           f.fn if isinstance(f, RewardFunction) else f, float(w))
            for f, w in zip(functions, weights, strict=True)]


def _announce(differences: Mapping[str, tuple[Any, Any]]) -> None:
    if differences:
        lines = "\n".join(f"  {key} = {ours!r}  (TRL: {theirs!r})"
                          for key, (ours, theirs) in sorted(differences.items()))
        logger.warning("crsp_ops defaults this run keeps that TRL's GRPOTrainer would not "
                       "(set them in args to choose):\n%s", lines)


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


__all__ = ["CRSPTrainer", "MemoryRows", "reward_list"]
