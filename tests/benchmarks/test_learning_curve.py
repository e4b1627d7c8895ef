"""benchmarks.learning curve's shared task schedule: every arm trains on the same prompts."""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from benchmarks.learning.arm_settings import arm_settings, sampling_seed, settings_root
from benchmarks.learning.arms import ScheduledTasks, training_schedule
from benchmarks.learning.curve import parse_args
from crsp_ops.crsp.tasks.starter_tasks import starter_tasks
from crsp_ops.crsp.tasks.task_types import MathTask, TaskType

TASKS = [MathTask(f"What is {i} plus 1?", "", str(i + 1), family="add") for i in range(5)]


def test_the_schedule_is_seeded_and_repeats_the_tasks_when_it_needs_more():
    args = SimpleNamespace(schedule_seed=3, steps=3, tasks_per_step=4)
    schedule = training_schedule(TASKS, args)
    assert len(schedule) == 12 and schedule == training_schedule(TASKS, args)
    assert sorted(t.answer for t in schedule[:5]) == sorted(t.answer for t in TASKS)
    assert schedule != training_schedule(TASKS, SimpleNamespace(schedule_seed=4, steps=3,
                                                                tasks_per_step=4))


def test_the_schedule_seed_defaults_to_the_seed_and_keeps_to_the_split():
    assert parse_args(["--model", "m", "--seed", "5"]).schedule_seed == 5
    assert parse_args(["--model", "m", "--seed", "5", "--schedule-seed", "7"]).schedule_seed == 7
    test = parse_args(["--model", "m", "--split", "test", "--schedule-seed", "4532"])
    assert (test.seed, test.schedule_seed) == (4521, 4532)  # the held-out draw keeps 4521
    assert parse_args(["--model", "m", "--split", "dev"]).schedule_seed == 2
    with pytest.raises(SystemExit):  # a dev seed on the test split
        parse_args(["--model", "m", "--split", "test", "--schedule-seed", "102"])


def test_math_draws_follow_the_schedule_other_types_the_trainer():
    code = list(starter_tasks(TaskType.CODE_O))
    buffers = ScheduledTasks({TaskType.MATH: TASKS, TaskType.CODE_O: code},
                             [TASKS[4], TASKS[0], TASKS[2]], capacity=10)
    rng = random.Random(0)
    assert buffers.sample(TaskType.MATH, 2, rng) == [TASKS[4], TASKS[0]]
    assert all(t in code for t in buffers.sample(TaskType.CODE_O, 3, rng))
    assert buffers.sample(TaskType.MATH, 1, rng) == [TASKS[2]]
    with pytest.raises(RuntimeError, match="0 math tasks left"):
        buffers.sample(TaskType.MATH, 1, rng)


def test_the_sampling_seed_reaches_the_trainer_and_leaves_the_tasks_to_seed():
    args = parse_args(["--model", "m", "--seed", "2", "--sampling-seed", "102"])
    assert sampling_seed(args) == 102
    assert arm_settings(args, "crsp", sampling_seed(args)).crsp.seed == 102
    assert arm_settings(args, "crsp").crsp.seed == 2  # the edge tasks are drawn with --seed
    assert sampling_seed(parse_args(["--model", "m", "--seed", "2"])) == 2


def test_server_rollouts_send_the_crsp_arms_to_vllm_cpu_updated_every_step():
    args = parse_args(["--model", "m", "--rollouts", "vllm_cpu",
                       "--server-python", "/venvs/vllm-cpu/bin/python"])
    served = arm_settings(args, "crsp")
    assert served.generation.backend == "openai_server" and served.generation.engine == "vllm"
    assert served.generation.server_command.startswith(
        "/venvs/vllm-cpu/bin/python -m vllm.entrypoints.openai.api_server")
    assert served.train.server_reload_interval == 1
    assert arm_settings(args, "grpo").generation.backend != "openai_server"  # TRL generates
    in_process = arm_settings(parse_args(["--model", "m"]), "crsp")
    assert in_process.generation.backend != "openai_server"


def test_a_user_task_folder_outside_any_project_runs_on_this_checkouts_settings(
        tmp_path, monkeypatch):
    monkeypatch.delenv("CRSP_OPS_ROOT", raising=False)
    monkeypatch.delenv("DVC_ROOT", raising=False)
    monkeypatch.chdir(tmp_path)  # a user's task folder: no Kconfig above it
    args = parse_args(["--model", "m", "--dataset", "train.jsonl", "--eval-dataset",
                       "dev.jsonl", "--reward", "reward.py:fn"])
    assert args.dataset == tmp_path / "train.jsonl"  # the working directory's, made absolute
    assert args.eval_dataset == tmp_path / "dev.jsonl"
    assert arm_settings(args, "crsp").train.dataset == str(tmp_path / "train.jsonl")
    assert settings_root() == Path(__file__).resolve().parents[2]


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "rows.jsonl").write_text('{"prompt": "hi", "answer": "1"}\n')
    (tmp_path / "reward.py").write_text("def fn(prompts, completions, **kw):\n    return [0.0]\n")
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.learning", "curve", "--model", "m", "--dataset",
         "rows.jsonl", "--eval-dataset", "rows.jsonl", "--reward", "reward.py:missing"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(repo)})
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("benchmarks.learning curve: reward 'reward.py:missing': reward.py "
                                   "has no attribute 'missing'")
