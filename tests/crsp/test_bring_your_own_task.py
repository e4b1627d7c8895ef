"""Issue 41: a prompt dataset and TRL-signature reward files through `crsp-ops train`.

End to end on the tiny model in a scratch project, tracking on; and every bad input: one line
on stderr, exit 2, and no run left RUNNING (a reward that raises mid-run: FAILED, traceback
saved as an artifact).
"""

import json
from pathlib import Path

import pytest

from crsp_ops.cli.main import main
from crsp_ops.cli.stage_io import run_record_path

FAST = ["train.steps=2", "train.solver_samples=2", "train.tasks_per_type=2",
        "train.max_new_tokens_solve=6", "tracking.flush_seconds=0.0",
        "train.eval_split_size=3"]
# A reward file as a TRL user writes it: no project import, TRL's signature.
TRL_REWARD = '''
def has_digit(prompts, completions, answer, **kwargs):
    texts = [c[-1]["content"] if isinstance(c, list) else c for c in completions]
    return [1.0 if any(ch.isdigit() for ch in t) else 0.0 for t in texts]


def raises(prompts, completions, **kwargs):
    if len(completions) == 1 and "boom" in str(prompts[0]):
        raise ValueError("cannot score this one")
    if any("boom" in str(p) for p in prompts):
        raise ValueError("cannot score this batch")
    return [0.0] * len(completions)


def wrong_length(prompts, completions, **kwargs):
    return [0.0]


def nan(prompts, completions, **kwargs):
    return [float("nan")] * len(completions)


def text(prompts, completions, **kwargs):
    return ["1.0"] * len(completions)
'''


@pytest.fixture()
def project(scratch_project):
    tmp_path = scratch_project
    rows = [{"prompt": f"What is {a} + 1? Reply with the number.", "answer": str(a + 1)}
            for a in range(7)]
    rows.append({"prompt": [{"role": "user", "content": "boom: what is 2 + 2?"}],
                 "answer": "4"})
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows[:7]))
    (tmp_path / "chat.jsonl").write_text(json.dumps(rows[7]) + "\n")
    (tmp_path / "rewards.py").write_text(TRL_REWARD)
    return tmp_path


def _client(root):
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=f"sqlite:///{root / 'mlflow.db'}")


def _train(model, *extra):
    args = ["train", "--model", str(model), "--out", "models/mine"]
    for item in FAST:
        args += ["--set", item]
    return main([*args, *extra])


def _error_lines(capsys):
    return [line for line in capsys.readouterr().err.splitlines()
            if line.startswith("crsp-ops ")]


def _runs(root):
    client = _client(root)
    return [run for experiment in client.search_experiments()
            for run in client.search_runs([experiment.experiment_id])]


def test_a_trl_reward_file_trains_unchanged_on_a_jsonl_dataset(project, tiny_model_dir):
    assert _train(tiny_model_dir, "--dataset", "data.jsonl",
                  "--reward", "rewards.py:has_digit",
                  "--reward", "crsp_ops.crsp.rewards.solve:answer_match=0.5") == 0
    out = project / "models" / "mine"
    run_id = json.loads(run_record_path(out).read_text())["run_id"]
    client = _client(project)
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    for key in ("reward/has_digit/mean", "reward/has_digit/std", "reward/answer_match/mean",
                "solve_rate/dataset", "loss"):
        assert [m.step for m in client.get_metric_history(run_id, key)] == [1, 2], key
    for key in ("eval/reward/has_digit", "eval/reward/has_digit_ci_low",
                "eval/reward/total", "eval/solve_rate/all"):
        assert [m.step for m in client.get_metric_history(run_id, key)] == [0, 2], key
    # no proposals and no critiques: the dataset's rows are the only tasks
    assert client.get_metric_history(run_id, "proposals/count")[-1].value == 0
    inputs = run.inputs.dataset_inputs
    assert [i.dataset.name for i in inputs] == ["train"]
    assert inputs[0].dataset.digest and inputs[0].tags[0].value == "training"
    assert inputs[0].dataset.source.endswith('data.jsonl"}')


def test_an_eval_dataset_is_recorded_and_chat_prompts_get_message_completions(
        project, tiny_model_dir):
    seen = project / "seen.json"
    (project / "spy.py").write_text(
        "import json\n"
        "def spy(prompts, completions, **kwargs):\n"
        f"    open({str(seen)!r}, 'w').write(json.dumps([prompts[0], completions[0]]))\n"
        "    return [0.0] * len(completions)\n")
    (project / "chat_ok.jsonl").write_text(json.dumps(
        {"prompt": [{"role": "user", "content": "2 + 2?"}], "answer": "4"}) + "\n")
    assert _train(tiny_model_dir, "--dataset", "chat_ok.jsonl", "--eval-dataset",
                  "chat_ok.jsonl", "--reward", "spy.py:spy",
                  "--set", "train.eval_split_size=0") == 0
    prompt, completion = json.loads(seen.read_text())
    assert prompt == [{"role": "user", "content": "2 + 2?"}]
    assert completion[0]["role"] == "assistant" and isinstance(completion[0]["content"], str)
    [run] = _runs(project)
    assert sorted(i.dataset.name for i in run.inputs.dataset_inputs) == ["eval", "train"]


@pytest.mark.parametrize(("extra", "message"), [
    (["--dataset", "missing.jsonl", "--reward", "rewards.py:has_digit"],
     "no such dataset file or folder"),
    (["--dataset", "no_prompt.jsonl", "--reward", "rewards.py:has_digit"],
     "no 'prompt' column (columns found: question, answer)"),
    (["--dataset", "empty.csv", "--reward", "rewards.py:has_digit"],
     "empty.csv: the dataset has no rows"),
    (["--dataset", "empty.jsonl", "--reward", "rewards.py:has_digit"],
     "empty.jsonl: the dataset has no rows"),
    (["--dataset", "broken.jsonl", "--reward", "rewards.py:has_digit"],
     "cannot read it as json: ArrowInvalid: JSON parse error"),
    (["--dataset", "int_prompt.jsonl", "--reward", "rewards.py:has_digit"],
     "row 0: prompt must be a string or a list of {role, content} messages, got int"),
    (["--dataset", "data.jsonl"], "needs reward functions"),
    (["--dataset", "data.jsonl", "--reward", "nowhere.py:f"], "does not exist"),
    (["--dataset", "data.jsonl", "--reward", "rewards.py:missing"],
     "has no attribute 'missing'"),
    (["--dataset", "data.jsonl", "--reward", "no_such_pkg.mod:f"],
     "cannot import module 'no_such_pkg.mod'"),
    (["--dataset", "data.jsonl", "--reward", "rewards.py"], "expected path/to/file.py:function"),
    (["--dataset", "no_answer.jsonl", "--reward", "rewards.py:has_digit"],
     "reward has_digit: needs column 'answer', which the dataset lacks (columns: prompt)"),
])
def test_bad_input_before_training_is_one_line_and_exit_2(project, tiny_model_dir, capsys,
                                                           extra, message):
    (project / "no_prompt.jsonl").write_text('{"question": "q", "answer": "1"}\n')
    (project / "no_answer.jsonl").write_text('{"prompt": "q"}\n')
    (project / "empty.csv").write_text("prompt,answer\n")
    (project / "empty.jsonl").write_text("")
    (project / "broken.jsonl").write_text('{"prompt": "q"}\nnot json\n')
    (project / "int_prompt.jsonl").write_text('{"prompt": 3}\n')
    assert _train(tiny_model_dir, *extra) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err, err
    assert _runs(project) == []  # it failed before a run was opened


@pytest.mark.parametrize(("reward", "message"), [
    ("rewards.py:raises", "reward raises: raised ValueError: cannot score this batch on sample "),
    ("rewards.py:wrong_length", "reward wrong_length: returned 1 values for 128 completions"),
    ("rewards.py:nan", "reward nan: returned nan for sample 0"),
    ("rewards.py:text", "reward text: returned '1.0' (str) for sample 0"),
])
def test_a_reward_failing_mid_run_fails_the_run_with_its_traceback(project, tiny_model_dir,
                                                                    capsys, reward, message):
    both = (project / "data.jsonl").read_text() + (project / "chat.jsonl").read_text()
    (project / "both.jsonl").write_text(both)
    assert _train(tiny_model_dir, "--dataset", "both.jsonl", "--reward", reward,
                  # 64 draws from 8 rows: the one "boom" row is drawn but for (7/8)**64
                  "--set", "train.eval_split_size=0", "--set", "train.tasks_per_type=64") == 2
    [line] = _error_lines(capsys)  # the one line among the run's log output
    assert line.startswith("crsp-ops train: data error: ") and message in line, line
    [run] = _runs(project)
    assert run.info.status == "FAILED"
    client = _client(project)
    path = client.download_artifacts(run.info.run_id, "errors/reward_traceback.txt",
                                     str(project / "artifacts"))
    assert "Traceback" in Path(path).read_text()


def test_a_slow_reward_is_reported_by_name(project, tiny_model_dir, capsys):
    (project / "slow.py").write_text(
        "import time\n"
        "def slow(prompts, completions, **kwargs):\n"
        "    time.sleep(5)\n"
        "    return [0.0] * len(completions)\n")
    assert _train(tiny_model_dir, "--dataset", "data.jsonl", "--reward", "slow.py:slow",
                  "--set", "train.reward_timeout_s=0.2") == 2
    [line] = _error_lines(capsys)
    assert "reward slow: took longer than train.reward_timeout_s=0.2 s" in line
    assert [run.info.status for run in _runs(project)] == ["FAILED"]
