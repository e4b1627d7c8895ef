"""TRL's scale_rewards modes, hand-computed, and train.preset's keys (user keys win)."""

import pytest
import torch

from crsp_ops.cli.main import main
from crsp_ops.config import load_settings
from crsp_ops.config.train_presets import PRESETS
from crsp_ops.crsp.rl.advantages import task_relative_advantages
from crsp_ops.crsp.rl.algorithms import compute_advantages, get_algorithm
from tests.crsp.conftest import REPO

# two prompts of two samples each (one role): prompt a gets 1, 0; prompt b gets 1, 1 and 3, 3
REWARDS = torch.tensor([1.0, 0.0, 3.0, 1.0])
GROUPS = ["a", "a", "b", "b"]
ROLES = ["solve"] * 4


def test_none_only_centres_each_group():
    advantages = task_relative_advantages(REWARDS, GROUPS, ROLES, scale="none", eps=1e-6)
    torch.testing.assert_close(advantages, torch.tensor([0.5, -0.5, 1.0, -1.0]))


def test_group_divides_by_each_groups_population_std():
    # a: mean 0.5, std 0.5 -> ±1; b: mean 2, std 1 -> ±1
    advantages = task_relative_advantages(REWARDS, GROUPS, ROLES, scale="group", eps=1e-6)
    torch.testing.assert_close(advantages, torch.tensor([1.0, -1.0, 1.0, -1.0]))


def test_batch_divides_every_group_by_the_roles_std():
    # all four rewards: mean 1.25, population std sqrt(((.25)^2+(1.25)^2+(1.75)^2+(.25)^2)/4)
    std = torch.tensor([1.0, 0.0, 3.0, 1.0]).std(unbiased=False)
    assert float(std) == pytest.approx(1.0897247, rel=1e-6)
    advantages = task_relative_advantages(REWARDS, GROUPS, ROLES, scale="batch", eps=1e-6)
    torch.testing.assert_close(advantages, torch.tensor([0.5, -0.5, 1.0, -1.0]) / std)


def test_batch_std_is_per_role():
    rewards = torch.tensor([1.0, 0.0, 10.0, 0.0])
    roles = ["solve", "solve", "critique", "critique"]
    advantages = task_relative_advantages(rewards, ["x"] * 4, roles, scale="batch", eps=1e-6)
    torch.testing.assert_close(advantages, torch.tensor([1.0, -1.0, 1.0, -1.0]))


def test_auto_is_the_algorithms_own_and_an_unknown_mode_is_refused():
    trrpg, trrpp = get_algorithm("trrpg"), get_algorithm("trr++")
    kwargs = {"eps": 1e-6}
    torch.testing.assert_close(compute_advantages(trrpg, REWARDS, GROUPS, ROLES, **kwargs),
                               torch.tensor([0.5, -0.5, 1.0, -1.0]))
    torch.testing.assert_close(compute_advantages(trrpp, REWARDS, GROUPS, ROLES, **kwargs),
                               torch.tensor([1.0, -1.0, 1.0, -1.0]))
    torch.testing.assert_close(
        compute_advantages(trrpp, REWARDS, GROUPS, ROLES, scale="none", **kwargs),
        torch.tensor([0.5, -0.5, 1.0, -1.0]))
    with pytest.raises(ValueError, match="scale must be one of"):
        task_relative_advantages(REWARDS, GROUPS, ROLES, scale="std", eps=1e-6)


# three prompts: a mixed (1, 0), b always right (1, 1), c always wrong (0, 0)
FLAT_REWARDS = torch.tensor([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])
FLAT_GROUPS = ["a", "a", "b", "b", "c", "c"]


def test_a_flat_group_gets_zero_unless_measured_against_the_steps_baseline():
    zero = task_relative_advantages(FLAT_REWARDS, FLAT_GROUPS, ["solve"] * 6, scale="group",
                                    eps=1e-6)
    torch.testing.assert_close(zero, torch.tensor([1.0, -1.0, 0.0, 0.0, 0.0, 0.0]))
    # step: b and c against all six rewards (mean 0.5, population std 0.5); a keeps its own
    step = task_relative_advantages(FLAT_REWARDS, FLAT_GROUPS, ["solve"] * 6, scale="group",
                                    eps=1e-6, flat="step")
    torch.testing.assert_close(step, torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0]))
    unscaled = task_relative_advantages(FLAT_REWARDS, FLAT_GROUPS, ["solve"] * 6, scale="none",
                                        eps=1e-6, flat="step")
    torch.testing.assert_close(unscaled, torch.tensor([0.5, -0.5, 0.5, 0.5, -0.5, -0.5]))


def test_a_step_where_every_reward_is_equal_stays_without_signal():
    same = task_relative_advantages(torch.ones(4), GROUPS, ROLES, scale="group", eps=1e-6,
                                    flat="step")
    torch.testing.assert_close(same, torch.zeros(4))
    with pytest.raises(ValueError, match="flat must be one of"):
        task_relative_advantages(REWARDS, GROUPS, ROLES, scale="group", eps=1e-6, flat="mean")


@pytest.mark.parametrize("name", sorted(set(PRESETS) - {"none"}))
def test_a_preset_sets_its_keys_and_labels_them(name):
    resolved = load_settings(REPO, [f"train.preset={name}"])
    train = resolved.settings.train
    for key, value in PRESETS[name].items():
        assert getattr(train, key.split(".", 1)[1]) == value, key
        assert resolved.sources[key] == f"preset:{name}", key


def test_grpo_is_trls_loss_and_a_key_you_set_wins():
    resolved = load_settings(REPO, ["train.preset=grpo", "train.loss_aggregation=token_mean"])
    train = resolved.settings.train
    assert (train.advantage_baseline, train.scale_rewards, train.beta_solve,
            train.ref_kl_coef, train.ratio_clips) == ("task", "group", 0.0, 0.0, (0.2, 0.2))
    assert train.loss_aggregation == "token_mean"
    assert resolved.sources["train.loss_aggregation"] == "--set"
    assert resolved.sources["train.beta_solve"] == "preset:grpo"
    plain = load_settings(REPO, []).settings.train
    assert plain.preset == "auto" and plain.beta_solve == 0.05  # self-play: the defaults


def test_auto_gives_a_dataset_run_trls_grpo_defaults_and_self_play_its_own():
    dataset = load_settings(REPO, ["train.dataset=rows.jsonl", "train.beta_solve=0.01"])
    train = dataset.settings.train
    assert (train.advantage_baseline, train.scale_rewards, train.loss_aggregation,
            train.ratio_clips, train.mask_truncated) == ("task", "group", "token_mean",
                                                         (0.2, 0.2), False)
    assert train.beta_solve == 0.01 and dataset.sources["train.beta_solve"] == "--set"
    assert dataset.sources["train.advantage_baseline"] == "preset:dataset"
    assert train.step_when_flat  # a flat step still steps AdamW, as TRL's Trainer does
    assert train.flat_group_advantage == "step"  # the dataset preset's departure from TRL
    assert train.learning_rate == 3e-5 and dataset.sources["train.learning_rate"] \
        == "preset:dataset"  # chosen on dev (notebook); Kconfig's 1e-4 is the tiny model's
    own_rate = load_settings(REPO, ["train.dataset=rows.jsonl", "train.learning_rate=1e-5"])
    assert own_rate.settings.train.learning_rate == 1e-5  # a rate the user sets wins
    grpo = load_settings(REPO, ["train.dataset=rows.jsonl", "train.preset=grpo"])
    assert grpo.settings.train.flat_group_advantage == "zero"  # TRL's names keep TRL's zero
    self_play = load_settings(REPO, [])
    assert self_play.settings.train.advantage_baseline == "task_type"
    assert not self_play.settings.train.step_when_flat
    assert self_play.sources["train.advantage_baseline"] == "Kconfig"
    assert self_play.settings.train.learning_rate == 1e-4


def test_an_unknown_preset_is_one_line_and_exit_2(scratch_project, capsys):
    assert main(["train", "--set", "train.preset=ppo", "--set", "tracking.enabled=n"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "train.preset" in err, err


def test_the_trainer_updates_with_the_presets_loss(tiny_model_dir, small_settings, tmp_path):
    from tests.crsp.test_selfplay_trainer import _trainer

    trainer = _trainer(tiny_model_dir, small_settings("train.preset=dr_grpo"), tmp_path)
    options = trainer.update_options
    trainer.close()
    assert (options.scale_rewards, options.loss_aggregation, dict(options.betas)["solve"],
            options.ratio_clip) == ("none", "constant_normalizer", 0.0, 0.2)


def test_the_flat_group_setting_reaches_the_update(tiny_model_dir, small_settings, tmp_path):
    from tests.crsp.test_selfplay_trainer import _trainer

    trainer = _trainer(tiny_model_dir, small_settings("train.flat_group_advantage=step"),
                       tmp_path)
    options = trainer.update_options
    trainer.close()
    assert options.flat_group_advantage == "step"
    assert load_settings(REPO, []).settings.train.flat_group_advantage == "zero"
