"""Models as TRL takes them, from any directory: a path, a cached Hub id, a model object.

Outside a crsp_ops project, CRSPTrainer and `crsp-ops train` resolve paths against the working
directory, read the packaged defaults and track to ./mlflow.db; each run records what it loaded.
"""

import shutil
from pathlib import Path

import pytest
from mlflow.tracking import MlflowClient

from crsp_ops.cli.main import main
from crsp_ops.crsp.api import CRSPTrainer
from crsp_ops.errors import MissingInputError
from crsp_ops.models.loading import load_causal_lm

REVISION = "0123456789abcdef0123456789abcdef01234567"
HUB_ID = "crsp-test/tiny-chat"
ROWS = [{"prompt": f"Count to {n}.", "n": n} for n in range(6)]
ARGS = {"train.steps": 1, "train.tasks_per_type": 2, "train.solver_samples": 2,
        "train.max_new_tokens_solve": 4, "train.eval_split_size": 2,
        "tracking.flush_seconds": 0.0}


def short(prompts, completions, **_):
    return [float(len(c) < 20) for c in completions]


@pytest.fixture
def anywhere(tmp_path, monkeypatch):
    """An empty working directory that is no crsp_ops project, offline, with no store set."""
    for variable in ("CRSP_OPS_ROOT", "DVC_ROOT", "MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


@pytest.fixture
def hub_cache(tmp_path, monkeypatch, tiny_model_dir):
    """A Hugging Face cache holding the tiny model as ``HUB_ID`` at ``REVISION``."""
    cache = tmp_path / "hf" / "hub"
    repo = cache / f"models--{HUB_ID.replace('/', '--')}"
    shutil.copytree(tiny_model_dir, repo / "snapshots" / REVISION)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(REVISION)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    return cache


def _finished_run(root: Path):
    client = MlflowClient(f"sqlite:///{root / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("-train")]
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.status == "FINISHED"
    assert client.get_metric_history(run.info.run_id, "eval/solve_rate/all")
    return run


def test_a_relative_directory_outside_any_project(anywhere, tiny_model_dir):
    (anywhere / "models").mkdir()
    (anywhere / "models" / "tiny").symlink_to(tiny_model_dir)
    trainer = CRSPTrainer("models/tiny", [short], {**ARGS, "output_dir": "out"}, ROWS)
    assert trainer.resolved.root == anywhere
    assert trainer.resolved.sources["train.steps"] == "--set"
    assert trainer.train().global_step == 1
    assert (anywhere / "out" / "config.json").is_file()
    tags = _finished_run(anywhere).data.tags
    assert (tags["model.loaded_from"], tags["model.name"]) == ("directory", "models/tiny")


def test_a_hub_id_from_the_local_cache_while_offline(anywhere, hub_cache):
    trainer = CRSPTrainer(HUB_ID, [short], {**ARGS, "output_dir": "out"}, ROWS)
    assert trainer.model_dir == hub_cache / f"models--crsp-test--tiny-chat/snapshots/{REVISION}"
    assert trainer.train().global_step == 1
    tags = _finished_run(anywhere).data.tags
    assert (tags["model.loaded_from"], tags["model.name"], tags["model.revision"]) == (
        "hub", HUB_ID, REVISION)


def test_a_model_object_with_its_processing_class(anywhere, tiny_model_dir):
    model, tokenizer = load_causal_lm(tiny_model_dir)
    with pytest.raises(TypeError, match="processing_class"):
        CRSPTrainer(model, [short], ARGS, ROWS)
    trainer = CRSPTrainer(model, [short], {**ARGS, "output_dir": "out"}, ROWS,
                          processing_class=tokenizer)
    assert trainer.train().global_step == 1
    assert _finished_run(anywhere).data.tags["model.loaded_from"] == "in-memory"


def test_a_hub_id_missing_from_the_cache_never_downloads(anywhere, hub_cache, monkeypatch):
    monkeypatch.delenv("HF_HUB_OFFLINE")  # downloads stay off: model.hub_download is n
    with pytest.raises(MissingInputError, match="model.hub_download"):
        CRSPTrainer("crsp-test/not-cached", [short], ARGS, ROWS)
    assert not (anywhere / "mlflow.db").exists()


def test_the_cli_names_a_missing_hub_id_in_one_line(scratch_project, hub_cache, capsys):
    code = main(["train", "--model", "crsp-test/not-cached", "--set", "model.hub_download=y",
                 "--set", "train.steps=1"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert "crsp-test/not-cached" in lines[0] and str(hub_cache) in lines[0]
    assert not (scratch_project / "mlflow.db").exists()  # no run was opened


def test_the_cli_trains_a_cached_hub_id(scratch_project, hub_cache):
    assert main(["train", "--model", HUB_ID, "--out", "models/hub", "--set", "train.steps=1",
                 "--set", "crsp.heldout_math=2", "--set", "train.eval_math_tasks=2",
                 "--set", "train.tasks_per_type=2", "--set", "train.solver_samples=2",
                 "--set", "train.max_new_tokens_solve=4"]) == 0
    tags = _finished_run(scratch_project).data.tags
    assert (tags["model.loaded_from"], tags["model.revision"]) == ("hub", REVISION)
    assert tags["base_model.weights_sha256"]  # the content hash as for a directory


REWARD_FILE = '''
def short(prompts, completions, **kwargs):
    return [float(len(c) < 20) for c in completions]
'''


def _users_task(folder: Path, model_dir: Path, out: str) -> list[str]:
    """Write a user's data.jsonl and rewards.py into ``folder``; the CLI's train arguments."""
    (folder / "data.jsonl").write_text("".join(f'{{"prompt": "Count to {n}."}}\n'
                                               for n in range(6)))
    (folder / "rewards.py").write_text(REWARD_FILE)
    return ["train", "--model", str(model_dir), "--dataset", "data.jsonl",
            "--reward", "rewards.py:short", "--out", out,
            *(item for key, value in ARGS.items() for item in ("--set", f"{key}={value}"))]


def test_the_cli_trains_a_users_task_outside_any_project(anywhere, tiny_model_dir):
    """`crsp-ops train --dataset` in a plain folder: the packaged defaults, ./mlflow.db."""
    assert main(_users_task(anywhere, tiny_model_dir, "models/mine")) == 0
    assert (anywhere / "models" / "mine" / "config.json").is_file()
    run = _finished_run(anywhere)
    assert run.data.params["train.dataset"] == "data.jsonl"


def test_the_cli_outside_a_project_without_a_model_is_one_line(anywhere, capsys):
    assert main(["train", "--set", "train.steps=1"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "models/seeded" in lines[0]
    assert not (anywhere / "mlflow.db").exists()


def test_the_api_and_the_cli_tag_a_run_on_one_basis(anywhere, tiny_model_dir):
    """Same model and rows: the same base-model id, held-out hash, algorithm and budget."""
    assert main(_users_task(anywhere, tiny_model_dir, "models/cli")) == 0
    CRSPTrainer(str(tiny_model_dir), ["rewards.py:short"], {**ARGS, "output_dir": "models/api"},
                "data.jsonl").train()
    model, tokenizer = load_causal_lm(tiny_model_dir)
    CRSPTrainer(model, ["rewards.py:short"], {**ARGS, "output_dir": "models/obj"}, "data.jsonl",
                processing_class=tokenizer).train()
    client = MlflowClient(f"sqlite:///{anywhere / 'mlflow.db'}")
    [experiment] = [e for e in client.search_experiments() if e.name.endswith("-train")]
    runs = client.search_runs([experiment.experiment_id], order_by=["attributes.start_time"])
    cli_tags, api_tags, object_tags = (run.data.tags for run in runs)
    keys = ("base_model.id", "base_model.tokenizer_sha256", "heldout.sha256", "heldout.size",
            "crsp.algorithm", "budget.steps", "seed")
    assert [api_tags[key] for key in keys] == [cli_tags[key] for key in keys]
    assert (api_tags["crsp.api"], cli_tags["heldout.size"], api_tags["budget.steps"]) == (
        "CRSPTrainer", "2", "1")
    assert "base_model.id" not in object_tags  # a model object has no files to hash
    assert object_tags["heldout.sha256"] == cli_tags["heldout.sha256"]
