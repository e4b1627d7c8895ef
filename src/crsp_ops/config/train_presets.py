"""``train.preset``: the loss knobs set as TRL's ``GRPOConfig`` means by a name.

A preset replaces the Kconfig defaults of the keys it names (a value the user set still wins,
and is labelled ``preset:<name>``): ``grpo``, ``dapo``, ``dr_grpo``, ``crsp``, ``dataset``,
``auto``. The field-by-field mapping is in docs/training.md.

Design: docs/design/platform.md#train_presets.
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

