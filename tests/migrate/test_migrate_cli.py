"""``crsp-ops migrate`` end to end on the synthetic AZR checkout of conftest.py."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from crsp_ops.cli.commands import migrate as driver
from tests.migrate.conftest import (
    COLLECTION_URL,
    HUB_ID,
    LATIN1_BYTES,
    PNG_BYTES,
    REPO_URL,
    snapshot,
    write_tree,
)


def run_migrate(*argv: str) -> int:
    parser = argparse.ArgumentParser()
    driver.add_arguments(parser)
    return driver.run(parser.parse_args(list(argv)))


def migrated(root: Path, tmp_path: Path, *extra: str) -> tuple[int, dict]:
    report_path = tmp_path / "report.json"
    code = run_migrate(str(root), "--report", str(report_path), *extra)
    return code, json.loads(report_path.read_text())


def test_migration_rewrites_renames_and_validates(azr_tree: Path, tmp_path: Path) -> None:
    # ``AzrRayTrainer``: ``Azr`` is no seed rule, so it is rewritten through a --rule addition.
    code, report = migrated(azr_tree, tmp_path, "--rule", "Azr=Crsp")
    assert code == 0 and report["ok"] and report["validation"]["ok"]

    files = snapshot(azr_tree)
    assert not any("azr" in path or "absolute_zero" in path for path in files)
    main = files["rewarded_self_play/main_crsp_ppo.py"].decode()
    assert "from rewarded_self_play.trainer.ppo.crsp_ray_trainer import CrspRayTrainer" in main
    assert "from .utils.crsp_utils import CRSP_VERSION" in main
    assert 'config_name="crsp_ppo_trainer"' in main
    assert f'HUB_MODEL = "{HUB_ID}"' in main and COLLECTION_URL in main

    config = files["rewarded_self_play/configs/crsp_ppo_trainer.yaml"].decode()
    assert config.startswith("crsp:\n") and "run_${crsp.seed}" in config and HUB_ID in config

    script = files["scripts/selfplay/crsp_7b.sh"].decode()
    assert "python -m rewarded_self_play.main_crsp_ppo" in script
    assert "--config-name=crsp_ppo_trainer" in script
    assert "crsp.seed=2" in script and "crsp.problem_types=[code_i]" in script
    assert f"trainer.model_path={HUB_ID}" in script
    assert os.access(azr_tree / "scripts/selfplay/crsp_7b.sh", os.X_OK)

    readme = files["README.md"].decode()
    assert readme.startswith("# Cognition via Rewarded Self-Play\n")
    assert "The Cognition via Rewarded\nSelf-Play proposes" in readme
    assert "![CRSP overview](assets/crsp.png)" in readme
    assert "(rewarded_self_play/trainer/ppo/crsp_ray_trainer.py)" in readme
    assert HUB_ID in readme and REPO_URL in readme
    assert "Hazrat" in readme and "@misc{azr2025," in readme

    # Binary and non-UTF-8 files: renamed, bytes untouched, listed with a reason.
    assert files["assets/crsp.png"] == PNG_BYTES
    assert files["docs/crsp_notes.txt"] == LATIN1_BYTES
    assert {s["path"]: s["reason"] for s in report["skipped"]} == {
        "assets/azr.png": "binary file",
        "docs/azr_notes.txt": "non-UTF-8 text",
    }


def test_report_lists_counts_leftovers_and_checks(azr_tree: Path, tmp_path: Path) -> None:
    _, report = migrated(azr_tree, tmp_path, "--rule", "Azr=Crsp")
    assert report["tool"] == "crsp-ops migrate"
    assert report["summary"]["files_changed"] == 8
    assert report["summary"]["paths_renamed"] == 9
    per_rule = report["replacements_per_rule"]
    assert per_rule["absolute_zero_reasoner -> rewarded_self_play"] >= 5
    assert per_rule["Azr -> Crsp"] == 3
    assert {"from": "absolute_zero_reasoner", "to": "rewarded_self_play", "kind": "directory",
            "via": "rename"} in report["renames"]

    def where(reason: str) -> set[str]:
        return {f"{o['path']}:{o['line']}" for o in report["remaining"] if o["reason"] == reason}

    in_word = "inside a longer word (not an identifier boundary)"
    trainer = "absolute_zero_reasoner/trainer/ppo/azr_ray_trainer.py"
    assert where(in_word) == {"README.md:11", f"{trainer}:5"}
    assert "README.md:9" in where("hub model id")
    assert "absolute_zero_reasoner/main_azr_ppo.py:10" in where("URL")
    assert where("citation") == {"README.md:14", "README.md:15"}
    non_utf8 = where("non-UTF-8 text: not rewritten")
    assert non_utf8 == {"docs/azr_notes.txt:1", "docs/azr_notes.txt:2"}

    validation = report["validation"]
    assert validation["python_files"] == 8
    assert validation["compile_failures"] == []
    assert validation["preexisting_compile_failures"][0].startswith("legacy/py2_crsp.py:1")
    checked = validation["references_checked"]
    assert checked["import"] >= 3 and checked["python -m"] == 2
    assert checked["hydra config name"] == 2 and checked["yaml interpolation"] == 1
    assert checked["cli override"] == 3 and checked["path"] == 3
    assert validation["second_pass_changes"] == 0


def test_second_run_changes_nothing(azr_tree: Path, tmp_path: Path) -> None:
    assert run_migrate(str(azr_tree)) == 0
    before = snapshot(azr_tree)
    code, report = migrated(azr_tree, tmp_path)
    assert code == 0
    assert snapshot(azr_tree) == before
    assert report["summary"]["files_changed"] == 0 and report["summary"]["paths_renamed"] == 0


def test_report_inside_the_tree_is_not_migrated_on_the_next_run(azr_tree: Path) -> None:
    report = azr_tree / "migration-report.json"
    assert run_migrate(str(azr_tree), "--report", str(report)) == 0
    first = report.read_bytes()
    assert b"azr -> crsp" in first
    assert run_migrate(str(azr_tree)) == 0  # no --report: still recognised as our report
    assert report.read_bytes() == first


def test_dry_run_prints_diff_and_touches_nothing(
    azr_tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(azr_tree)
    code, report = migrated(azr_tree, tmp_path, "--dry-run")
    out = capsys.readouterr().out
    assert code == 0 and report["dry_run"]
    assert snapshot(azr_tree) == before
    header = (
        "--- a/absolute_zero_reasoner/main_azr_ppo.py\n+++ b/rewarded_self_play/main_crsp_ppo.py"
    )
    assert header in out
    assert "-from absolute_zero_reasoner.utils import azr_utils\n" in out
    assert "+from rewarded_self_play.utils import crsp_utils\n" in out
    assert "  absolute_zero_reasoner/ -> rewarded_self_play/\n" in out
    assert "  assets/azr.png -> assets/crsp.png\n" in out
    assert "dry run: nothing written" in out


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_renames_go_through_git_so_history_follows(tmp_path: Path) -> None:
    root = write_tree(tmp_path / "checkout")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "azr checkout"], check=True)
    (root / "absolute_zero_reasoner/scratch_azr.py").write_text("X = 1\n")  # untracked

    code, report = migrated(root, tmp_path)
    assert code == 0 and report["git_work_tree"] == str(root.resolve())
    via = {r["from"]: r["via"] for r in report["renames"]}
    assert via["absolute_zero_reasoner"] == "git mv"
    assert via["absolute_zero_reasoner/scratch_azr.py"] == "rename"
    assert (root / "rewarded_self_play/scratch_crsp.py").read_text() == "X = 1\n"

    status = subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True,
                            check=True).stdout
    renamed_in_index = {line[3:] for line in status.splitlines() if line.startswith("R")}
    assert "absolute_zero_reasoner/utils/azr_utils.py -> rewarded_self_play/utils/crsp_utils.py" \
        in renamed_in_index
    assert "assets/azr.png -> assets/crsp.png" in renamed_in_index
    # The index holds pure renames (edits unstaged): commit them first, as the summary advises.
    subprocess.run([*git, "commit", "-qm", "renames"], check=True)
    subprocess.run([*git, "commit", "-qam", "edits"], check=True)
    new_path = "rewarded_self_play/trainer/ppo/crsp_ray_trainer.py"
    log = subprocess.run([*git, "log", "--follow", "--format=%s", "--", new_path],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    assert log == ["edits", "renames", "azr checkout"]


def test_broken_reference_fails_validation(azr_tree: Path, tmp_path: Path) -> None:
    # Keeping the import text while its package is renamed would break the import: the
    # migration still runs, but validation must point at the line and exit non-zero.
    code, report = migrated(azr_tree, tmp_path, "--keep", r"from absolute_zero_reasoner\.utils")
    assert code == 1 and not report["ok"]
    broken = {(b["kind"], b["path"], b["line"], b["target"])
              for b in report["validation"]["broken_references"]}
    assert ("import", "rewarded_self_play/main_crsp_ppo.py", 5,
            "absolute_zero_reasoner.utils") in broken


def test_rename_conflict_aborts_before_writing(azr_tree: Path, tmp_path: Path) -> None:
    (azr_tree / "assets/crsp.png").write_bytes(b"already here")
    before = snapshot(azr_tree)
    code, report = migrated(azr_tree, tmp_path)
    assert code == 1
    assert report["validation"]["rename_conflicts"] == [
        "assets/azr.png -> assets/crsp.png: target already exists"
    ]
    assert snapshot(azr_tree) == before


def test_crlf_and_bom_survive(tmp_path: Path) -> None:
    path = tmp_path / "tree/notes.md"
    path.parent.mkdir()
    path.write_bytes("\ufeffAZR line\r\nsecond azr\r\n".encode())
    assert run_migrate(str(tmp_path / "tree")) == 0
    assert path.read_bytes() == "\ufeffCRSP line\r\nsecond crsp\r\n".encode()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["{tmp}/missing"], "does not exist"),
        (["{tmp}/file.txt"], "is not a directory"),
        (["{tmp}", "--keep", "azr("], "not a valid regular expression"),
    ],
)
def test_usage_errors_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    (tmp_path / "file.txt").write_text("azr\n")
    assert run_migrate(*[arg.format(tmp=tmp_path) for arg in argv]) == 2
    assert message in capsys.readouterr().err
    assert (tmp_path / "file.txt").read_text() == "azr\n"


def test_relative_symlink_follows_the_renamed_target(azr_tree: Path) -> None:
    link = azr_tree / "scripts/azr_latest.sh"
    link.symlink_to("selfplay/azr_7b.sh")
    assert run_migrate(str(azr_tree)) == 0
    moved = azr_tree / "scripts/crsp_latest.sh"
    assert moved.is_symlink() and os.readlink(moved) == "selfplay/crsp_7b.sh"
    assert moved.read_text().startswith("#!/bin/bash")


def broken_kinds(report: dict) -> set[tuple[str, str, int, str]]:
    return {(b["kind"], b["path"], b["line"], b["target"])
            for b in report["validation"]["broken_references"]}


def test_config_file_kept_but_config_name_rewritten_fails(azr_tree: Path, tmp_path: Path) -> None:
    code, report = migrated(azr_tree, tmp_path, "--keep", r"azr_ppo_trainer\.yaml")
    assert code == 1
    assert (azr_tree / "rewarded_self_play/configs/azr_ppo_trainer.yaml").exists()
    broken = broken_kinds(report)
    assert ("hydra config name", "rewarded_self_play/main_crsp_ppo.py", 13,
            "crsp_ppo_trainer") in broken
    assert ("hydra config name", "scripts/selfplay/crsp_7b.sh", 4, "crsp_ppo_trainer") in broken


def test_yaml_key_kept_but_interpolation_and_overrides_rewritten_fail(
    azr_tree: Path, tmp_path: Path
) -> None:
    code, report = migrated(azr_tree, tmp_path, "--keep", "(?m)^azr:")
    assert code == 1
    broken = broken_kinds(report)
    assert ("yaml interpolation", "rewarded_self_play/configs/crsp_ppo_trainer.yaml", 6,
            "crsp.seed") in broken
    assert ("cli override", "scripts/selfplay/crsp_7b.sh", 5, "crsp.seed") in broken


def test_caches_venvs_and_large_files_are_left_alone(azr_tree: Path, tmp_path: Path) -> None:
    (azr_tree / ".venv/lib").mkdir(parents=True)
    (azr_tree / ".venv/lib/azr.py").write_text("import azr\n")
    (azr_tree / "absolute_zero_reasoner.egg-info").mkdir()
    (azr_tree / "absolute_zero_reasoner.egg-info/SOURCES.txt").write_text("azr\n")
    (azr_tree / "data").mkdir()
    (azr_tree / "data/azr_big.jsonl").write_text('{"q": "azr"}\n' * 200)
    code, report = migrated(azr_tree, tmp_path, "--max-file-mb", "0.001")
    assert code == 0
    assert (azr_tree / ".venv/lib/azr.py").read_text() == "import azr\n"
    assert (azr_tree / "absolute_zero_reasoner.egg-info/SOURCES.txt").exists()
    assert set(report["excluded_directories"]) == {".venv", "absolute_zero_reasoner.egg-info"}
    assert (azr_tree / "data/crsp_big.jsonl").read_text() == '{"q": "azr"}\n' * 200
    assert {"path": "data/azr_big.jsonl", "reason": "larger than 1048 bytes",
            "possible_occurrences": 0} in report["skipped"]
