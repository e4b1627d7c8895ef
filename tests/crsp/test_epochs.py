"""A dataset in epochs: each row once per epoch, a fresh seeded order each epoch, the budget in
steps counted from train.num_epochs, and the trainer_state a reward function sees."""

import random

import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from crsp_ops.config import ConfigError, load_settings
from crsp_ops.crsp.policy.accelerator import make_accelerator
from crsp_ops.crsp.selfplay.epochs import EpochBuffer
from crsp_ops.crsp.tasks.task_types import PromptTask, TaskType
from crsp_ops.crsp.trainer.build import build_trainer
from crsp_ops.crsp.trainer.options import epoch_budget
from crsp_ops.crsp.user_task import user_reward_set
from tests.crsp.conftest import REPO, SMALL_RUN, ScriptedGeneration

ROWS = [PromptTask(f"row {i}", {"i": i}) for i in range(10)]


def _drawn(buffer, draws, count):
    rng = random.Random(0)
    return [task.columns["i"] for _ in range(draws)
            for task in buffer.draw(TaskType.DATASET, count, rng)]


def test_each_row_once_per_epoch_in_a_new_order_each_epoch():
    drawn = _drawn(EpochBuffer(ROWS, seed=3), 5, 4)  # 20 rows: two epochs, one draw straddles
    first, second = drawn[:10], drawn[10:]
    assert sorted(first) == sorted(second) == list(range(10))
    assert first != second
    assert drawn == _drawn(EpochBuffer(ROWS, seed=3), 5, 4)  # deterministic given the seed
    assert drawn != _drawn(EpochBuffer(ROWS, seed=4), 5, 4)


def test_processes_take_disjoint_shares_and_the_position_survives_a_checkpoint():
    ranks = [EpochBuffer(ROWS, seed=3, rank=r, processes=2) for r in range(2)]
    shares = [_drawn(buffer, 2, 2) for buffer in ranks]  # 2 steps x 2 rows x 2 processes
    assert len(set(shares[0]) | set(shares[1])) == 8
    assert ranks[0].epoch == pytest.approx(0.8)
    buffer = EpochBuffer(ROWS, seed=3)
    _drawn(buffer, 2, 3)
    restored = EpochBuffer(ROWS, seed=3)
    restored.load_state(buffer.state())
    assert _drawn(restored, 3, 3) == _drawn(buffer, 3, 3)


def test_num_epochs_sets_the_budget_unless_train_steps_is_set():
    only_epochs = load_settings(REPO, ["train.num_epochs=3", "train.tasks_per_type=4"])
    assert only_epochs.settings.train.steps == 0
    assert only_epochs.sources["train.steps"] == "train.num_epochs"
    assert epoch_budget(only_epochs.settings.train, ROWS).steps == 3 * 3  # ceil(10 / 4) each
    assert epoch_budget(only_epochs.settings.train, ROWS, processes=2).steps == 3 * 2
    both = load_settings(REPO, ["train.num_epochs=3", "train.steps=5"]).settings.train
    assert epoch_budget(both, ROWS).steps == 5  # max steps wins, as in Hugging Face's Trainer
    with pytest.raises(ConfigError, match="self-play tasks have no epochs"):
        epoch_budget(only_epochs.settings.train, [])


def test_a_reward_function_sees_epoch_global_step_and_max_steps(tiny_model_dir, tmp_path):
    run = [item for item in SMALL_RUN if not item.startswith("train.steps=")]
    settings = load_settings(REPO, [*run, "train.num_epochs=2", "train.tasks_per_type=2"]
                             ).settings
    seen = []

    def record(prompts, completions, trainer_state, **_):
        seen.append((trainer_state.global_step, trainer_state.max_steps, trainer_state.epoch,
                     prompts[::2]))  # solver_samples=2: each prompt twice
        return [float(len(c)) for c in completions]

    rows = ROWS[:4]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    trainer = build_trainer(settings, model, tokenizer,
        out_dir=tmp_path, tasks=rows, rewards=user_reward_set([record], settings.train,
                                                                       ["prompt", "i"]),
        accelerator=make_accelerator("no", "cpu"), generation=ScriptedGeneration(model, tokenizer))
    assert trainer.train().global_step == 4  # 2 epochs of ceil(4 / 2) steps
    assert [(step, total, epoch) for step, total, epoch, _ in seen] == [
        (1, 4, 0.0), (2, 4, 0.5), (3, 4, 1.0), (4, 4, 1.5)]
    epochs = [seen[0][3] + seen[1][3], seen[2][3] + seen[3][3]]
    assert sorted(epochs[0]) == sorted(epochs[1]) == sorted(row.prompt for row in rows)
    assert epochs[0] != epochs[1]
