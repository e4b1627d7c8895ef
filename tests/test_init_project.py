"""`crsp-ops init`: a new project whose Kconfig sources the package's declarations."""

from pathlib import Path

import pytest
import yaml

from crsp_ops.cli.main import main
from crsp_ops.config import load_settings

REPO = Path(__file__).resolve().parents[1]
WRITTEN = {"Kconfig", ".config", "params.yaml", "dvc.yaml", "MLproject", ".gitignore",
           ".dvcignore", "README.md"}


@pytest.fixture
def outside(tmp_path, monkeypatch):
    for variable in ("CRSP_OPS_ROOT", "DVC_ROOT"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_init_writes_a_project_that_loads_its_configuration(outside, capsys):
    assert main(["init", "proj"]) == 0
    project = outside / "proj"
    assert {p.name for p in project.iterdir()} == WRITTEN
    assert (project / "Kconfig").read_text() == (REPO / "Kconfig").read_text()
    resolved = load_settings(project, [], env={})  # no MLFLOW_TRACKING_URI of the caller's
    assert resolved.root == project and resolved.settings.train.steps > 0
    assert set(resolved.sources.values()) == {"Kconfig"}  # defconfig keeps every default
    assert "git init && dvc init && dvc repro" in capsys.readouterr().out


def test_init_with_a_profile_chooses_its_values(outside):
    assert main(["init", "proj", "--profile", "smollm2"]) == 0
    resolved = load_settings(outside / "proj", [])
    assert resolved.settings.model.source == "smollm2"
    assert resolved.sources["model.source"] == ".config"


def test_init_refuses_a_non_empty_directory_in_one_line(outside, capsys):
    (outside / "notes.txt").write_text("mine\n")
    assert main(["init"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "not empty" in lines[0] and "--force" in lines[0]
    assert {p.name for p in outside.iterdir()} == {"notes.txt"}
    assert main(["init", "--force"]) == 0
    assert {p.name for p in outside.iterdir()} == WRITTEN | {"notes.txt"}


def test_an_unknown_profile_is_one_line(outside, capsys):
    assert main(["init", "proj", "--profile", "nosuch"]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "defconfig" in err
    assert not (outside / "proj").exists()


def test_the_generated_pipeline_reads_what_the_checkout_stages_read(outside):
    """A generated stage lists exactly the params of the checkout's stage of the same name."""
    assert main(["init", "proj"]) == 0
    generated = yaml.safe_load((outside / "proj" / "dvc.yaml").read_text())["stages"]
    checkout = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert set(generated) == {"limo", "financebench", "base_model", "train"}
    for name, stage in generated.items():
        assert stage["params"] == checkout[name]["params"], name
        assert stage["cmd"].startswith("crsp-ops ")
        assert [o for o in stage["outs"]] == checkout[name]["outs"], name
