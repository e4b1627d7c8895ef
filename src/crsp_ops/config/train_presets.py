"""``train.preset``: the loss knobs set as TRL's ``GRPOConfig`` means by a name.

A preset replaces the Kconfig defaults of the keys it names; a value the user set (.config,
params.yaml, ``--set``) still wins, and every key a preset set is labelled ``preset:<name>``
in the resolved sources (``crsp-ops config show``, the run's params). The mapping, field by
field, is the table in docs/training.md:

* ``grpo``: TRL's ``loss_type="grpo"``: per-prompt baseline, rewards scaled by the group's
  standard deviation, per-response token mean then batch mean, ratio clip 0.2, no KL
  (``beta=0``: neither to the sampling policy nor to a reference). Like every TRL preset,
  AdamW steps on a step with no signal too (``train.step_when_flat``), as TRL's Trainer does.
* ``dapo``: DAPO as TRL's docs configure it: ``loss_type="dapo"`` (every token of the step
  weighs the same), clip-higher ``epsilon_high=0.28``, truncated completions masked, no KL.
* ``dr_grpo``: ``loss_type="dr_grpo"`` (a constant normaliser: no length bias) with
  ``scale_rewards="none"``, no KL.
* ``crsp``: the project's self-play choices: task-type baselines, TR-RPG's per-role KL to the
  sampling policy, token mean.
* ``dataset``: what ``GRPOConfig()`` means with no argument (TRL's ``loss_type="dapo"``
  aggregation without DAPO's clip-higher or masking): per-prompt baseline, group scaling, every
  token of the step weighing the same, ratio clip 0.2, no KL; and two choices made on dev runs:
  a flat group (every sample scored alike) is measured against the step's baseline instead of
  getting 0 (``train.flat_group_advantage=step``), and the learning rate is 3e-5 (Kconfig's 1e-4
  is the demo's tiny model's; TRL's is 1e-6).
* ``auto`` (the default): ``dataset`` when the run trains on a dataset (``train.dataset`` set),
  else every key as Kconfig declares it (the self-play defaults, which ``crsp`` names).
"""

from __future__ import annotations

from typing import Any

_NO_KL = {"train.beta_propose": 0.0, "train.beta_solve": 0.0, "train.beta_critique": 0.0,
          "train.ref_kl_coef": 0.0, "train.algorithm": "trrpg"}
_GROUP_RELATIVE = {"train.advantage_baseline": "task", "train.ratio_clip": 0.2,
                   "train.update_epochs": 1, "train.step_when_flat": True}

PRESETS: dict[str, dict[str, Any]] = {
    "none": {},
    "grpo": {**_NO_KL, **_GROUP_RELATIVE, "train.scale_rewards": "group",
             "train.loss_aggregation": "sequence_mean", "train.ratio_clip_low": 0.0,
             "train.ratio_clip_high": 0.0, "train.mask_truncated": False},
    "dapo": {**_NO_KL, **_GROUP_RELATIVE, "train.scale_rewards": "group",
             "train.loss_aggregation": "token_mean", "train.ratio_clip_low": 0.2,
             "train.ratio_clip_high": 0.28, "train.mask_truncated": True},
    "dr_grpo": {**_NO_KL, **_GROUP_RELATIVE, "train.scale_rewards": "none",
                "train.loss_aggregation": "constant_normalizer",
                "train.loss_constant_normalizer": 0, "train.ratio_clip_low": 0.0,
                "train.ratio_clip_high": 0.0, "train.mask_truncated": False},
    "dataset": {**_NO_KL, **_GROUP_RELATIVE, "train.scale_rewards": "group",
                "train.loss_aggregation": "token_mean", "train.ratio_clip_low": 0.0,
                "train.ratio_clip_high": 0.0, "train.mask_truncated": False,
                "train.flat_group_advantage": "step", "train.learning_rate": 3e-5},
    "crsp": {"train.algorithm": "trrpg", "train.advantage_baseline": "task_type",
             "train.scale_rewards": "auto", "train.beta_propose": 0.01,
             "train.beta_solve": 0.05, "train.beta_critique": 0.1,
             "train.loss_aggregation": "token_mean"},
}


def preset_name(values: dict[str, Any]) -> str:
    """The preset in effect: ``train.preset``, with ``auto`` resolved by ``train.dataset``.

    >>> preset_name({"train.preset": "auto", "train.dataset": "rows.jsonl"})
    'dataset'
    >>> preset_name({"train.preset": "auto", "train.dataset": ""})
    'none'
    """
    name = values.get("train.preset", "none")
    if name == "auto":
        return "dataset" if values.get("train.dataset") else "none"
    return name


def apply_preset(values: dict[str, Any], sources: dict[str, str]) -> None:
    """Set the keys of the preset in effect whose value is still Kconfig's default.

    >>> values = {"train.preset": "grpo", "train.beta_solve": 0.05, "train.ratio_clip": 0.3}
    >>> sources = {"train.preset": "--set", "train.beta_solve": "Kconfig",
    ...            "train.ratio_clip": ".config"}
    >>> apply_preset(values, sources)
    >>> values["train.beta_solve"], sources["train.beta_solve"], values["train.ratio_clip"]
    (0.0, 'preset:grpo', 0.3)
    """
    name = preset_name(values)
    for key, value in PRESETS[name].items():  # Kconfig's choice keeps unknown names out
        if key in values and sources.get(key) == "Kconfig":
            values[key] = value
            sources[key] = f"preset:{name}"

