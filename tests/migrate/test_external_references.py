"""Published references survive ``crsp-ops migrate`` in every form, and the report lists them."""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from crsp_ops.cli.commands import migrate as driver
from crsp_ops.migrate import format_summary
from crsp_ops.migrate.labels import find_labels, name_key
from crsp_ops.migrate.protect import find_protections, url_kind
from crsp_ops.migrate.rewrite import UNMAPPED_REASON, rewrite_text
from crsp_ops.migrate.rules import DEFAULT_RULES
from tests.migrate.conftest import snapshot
from tests.migrate.external_tree import (
    BASE_HUB_ID,
    CACHED_CONFIG,
    CODER_HUB_ID,
    FILES,
    FORMS,
    LABELS,
    write_external_tree,
)


def run_migrate(root: Path, report: Path, *extra: str) -> tuple[int, dict]:
    parser = argparse.ArgumentParser()
    driver.add_arguments(parser)
    code = driver.run(parser.parse_args([str(root), "--report", str(report), *extra]))
    return code, json.loads(report.read_text())


@pytest.fixture(scope="module")
def migrated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """The external-reference tree, migrated once with the default options."""
    base = tmp_path_factory.mktemp("external")
    root = write_external_tree(base / "checkout")
    code, report = run_migrate(root, base / "report.json")
    assert code == 0 and report["ok"]
    return root, report


def line_of(root: Path, path: str, line: int) -> str:
    return (root / path).read_text().splitlines()[line - 1]


@pytest.mark.parametrize(("path", "line", "kind", "text"), FORMS,
                         ids=[f"{kind}:{text}" for _, _, kind, text in FORMS])
def test_each_form_is_kept_and_listed_with_its_kind(
    migrated: tuple[Path, dict], path: str, line: int | None, kind: str, text: str
) -> None:
    root, report = migrated
    if line is None:
        assert (root / path).is_dir()  # a cache directory checked into the tree keeps its name
    else:
        assert text in line_of(root, path, line)
    listed = {(r["path"], r["line"], r["kind"], r["text"]) for r in report["protected_references"]}
    assert (path, line, kind, text) in listed


def test_protected_references_are_grouped_by_kind_in_json_and_text(
    migrated: tuple[Path, dict],
) -> None:
    _, report = migrated
    expected: dict[str, list[str]] = {}
    for path, line, kind, text in sorted(FORMS, key=lambda f: (f[0], f[1] or 0)):
        expected.setdefault(kind, []).append(f"{path}{f':{line}' if line else ''}: {text}")
    assert {kind: sorted(v) for kind, v in report["protected_by_kind"].items()} == {
        kind: sorted(v) for kind, v in expected.items()
    }
    assert report["summary"]["protected_references"] == len(FORMS)
    summary = format_summary(report, max_listed=100)
    assert f"  protected references, never rewritten ({len(FORMS)}):" in summary
    assert "    hub cache directory (5):" in summary
    assert (
        "      eval/run.sh:3: models--andrewzh--Absolute_Zero_Reasoner-Coder-3b" in summary
    )
    assert "      eval/tracking.py:7: runs:/0a1b2c3d/azr_policy" in summary


def test_everything_else_in_those_files_is_still_migrated(migrated: tuple[Path, dict]) -> None:
    root, _ = migrated
    assert line_of(root, "eval/run.sh", 7) == 'crsp_eval --model "$CODER" --tasks "$TASKS"'
    # A local checkpoint path is no published reference: it follows the rename of its writer.
    assert line_of(root, "eval/download.py", 9) == (
        'crsp_local = AutoModelForCausalLM.from_pretrained("./outputs/crsp_sft")'
    )
    assert line_of(root, "eval/tracking.py", 12) == "crsp_seed = 1"
    assert line_of(root, "eval/weights.md", 1) == "# CRSP weights"
    assert line_of(root, "eval/weights.md", 4).endswith("with the CRSP loader.")
    # A longer name is another artifact; a file without the reference has no label.
    assert '"CRSP-Coder-7b-rerun": 54.0' in line_of(root, "eval/leaderboard.py", 7)
    assert "reused by CRSP-Coder-7b and the crsp loader" in line_of(root, "eval/notes.md", 3)


def test_hub_cache_directory_in_the_tree_is_left_whole(migrated: tuple[Path, dict]) -> None:
    root, report = migrated
    assert (root / CACHED_CONFIG).read_text() == FILES[CACHED_CONFIG]
    assert "cache/models--leaplab--azr-tiny-1b" in report["excluded_directories"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_tracked_hub_cache_directory_is_left_whole_in_a_git_tree(tmp_path: Path) -> None:
    root = write_external_tree(tmp_path / "checkout")
    git = ["git", "-C", str(root), "-c", "user.name=t", "-c", "user.email=t@example.com"]
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "azr eval"]):
        subprocess.run([*git, *args], check=True)
    code, report = run_migrate(root, tmp_path / "report.json")
    assert code == 0 and report["git_work_tree"]
    assert (root / CACHED_CONFIG).read_text() == FILES[CACHED_CONFIG]
    assert report["excluded_directories"] == ["cache/models--leaplab--azr-tiny-1b"]
    listed = {(r["path"], r["kind"]) for r in report["protected_references"]}
    assert ("cache/models--leaplab--azr-tiny-1b", "hub cache directory") in listed


def test_repo_id_interpolation_follows_the_renamed_key(migrated: tuple[Path, dict]) -> None:
    root, report = migrated
    assert (root / "eval/hub.yaml").read_text() == (
        f"crsp:\n  repo: {CODER_HUB_ID}\nhub:\n  repo_id: ${{crsp.repo}}\n"
    )
    assert report["validation"]["references_checked"]["yaml interpolation"] == 1


def test_labels_sharing_a_published_name_are_reported_not_rewritten(
    migrated: tuple[Path, dict],
) -> None:
    root, report = migrated
    assert f'"AZR-Coder-7b": "{CODER_HUB_ID}",' in line_of(root, "eval/leaderboard.py", 4)
    assert f'"AZR-Base-7b": "{BASE_HUB_ID}",' in line_of(root, "eval/leaderboard.py", 5)
    assert line_of(root, "eval/results.md", 6) == "| azr coder 7b (rerun) | local | 54.0 |"
    reported = [(x["path"], x["line"], x["text"]) for x in report["labels_for_review"]]
    assert reported == [(path, line, text) for path, line, text, _ in LABELS]
    for label, (*_, reference) in zip(report["labels_for_review"], LABELS, strict=True):
        assert reference in label["reference"]
    assert "labels of published artifacts, left for review (6;" in format_summary(report)


def test_variant_no_rule_names_is_left_and_reported(migrated: tuple[Path, dict]) -> None:
    root, report = migrated
    assert "The Absolute_Zero_Reasoner prompts" in line_of(root, "eval/notes.md", 3)
    left = [(o["path"], o["line"], o["text"]) for o in report["remaining"]
            if o["reason"] == UNMAPPED_REASON]
    assert left == [("eval/notes.md", 3, "Absolute_Zero_Reasoner")]
    assert UNMAPPED_REASON == "left: not a mapping rule"
    assert sorted(report["rules"]) == [  # the seed's mapping, nothing more
        "AZR -> CRSP",
        "Absolute Zero Reasoner -> Cognition via Rewarded Self-Play",
        "absolute zero reasoner -> Cognition via Rewarded Self-Play",
        "absolute_zero_reasoner -> rewarded_self_play",
        "azr -> crsp",
    ]


def test_rename_labels_rewrites_labels_but_never_references(tmp_path: Path) -> None:
    root = write_external_tree(tmp_path / "checkout")
    code, report = run_migrate(root, tmp_path / "report.json", "--rename-labels")
    assert code == 0 and report["labels_for_review"] == []
    assert line_of(root, "eval/leaderboard.py", 4) == f'    "CRSP-Coder-7b": "{CODER_HUB_ID}",'
    assert line_of(root, "eval/results.md", 6) == "| crsp coder 7b (rerun) | local | 54.0 |"
    for path, line, _, text in FORMS:
        assert line is None or text in line_of(root, path, line)


def test_rule_addition_rewrites_the_variant_outside_references(tmp_path: Path) -> None:
    root = write_external_tree(tmp_path / "checkout")
    rule = "Absolute_Zero_Reasoner=Rewarded_Self_Play"
    code, report = run_migrate(root, tmp_path / "report.json", "--rule", rule)
    assert code == 0
    assert "The Rewarded_Self_Play prompts" in line_of(root, "eval/notes.md", 3)
    assert report["replacements_per_rule"]["Absolute_Zero_Reasoner -> Rewarded_Self_Play"] == 1
    for path, line, _, text in FORMS:
        assert line is None or text in line_of(root, path, line)


@pytest.mark.parametrize(
    "extra",
    [(), ("--rename-labels", "--rule", "Absolute_Zero_Reasoner=Rewarded_Self_Play")],
    ids=["defaults", "labels-and-rule"],
)
def test_second_run_changes_nothing(tmp_path: Path, extra: tuple[str, ...]) -> None:
    root = write_external_tree(tmp_path / "checkout")
    code, first = run_migrate(root, tmp_path / "first.json", *extra)
    assert code == 0 and first["validation"]["second_pass_changes"] == 0
    before = snapshot(root)
    code, second = run_migrate(root, tmp_path / "second.json", *extra)
    assert code == 0 and snapshot(root) == before
    assert second["summary"]["files_changed"] == 0
    def listed(report: dict) -> list[tuple]:  # columns move where a label was rewritten
        return [(r["path"], r["line"], r["kind"], r["text"]) for r in report["protected_references"]]

    assert listed(second) == listed(first)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("Azr", "must look like OLD=NEW"),
        ("=Crsp", "must look like OLD=NEW"),
        ("Foo=Bar", "OLD must contain a spelling"),
        ("azr=azr2", "NEW must not contain an old name"),
    ],
)
def test_bad_rule_is_a_usage_error_and_touches_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], spec: str, message: str
) -> None:
    root = write_external_tree(tmp_path / "checkout")
    before = snapshot(root)
    parser = argparse.ArgumentParser()
    driver.add_arguments(parser)
    assert driver.run(parser.parse_args([str(root), "--rule", spec])) == 2
    assert message in capsys.readouterr().err
    assert snapshot(root) == before


# Single strings: the pure functions behind the forms above.


def migrate_text(text: str, dirs: tuple[str, ...] = ()) -> str:
    protections = find_protections(text, (), dirs)
    labels = [label.protection() for label in find_labels(text, protections)]
    return rewrite_text(text, DEFAULT_RULES, protections + labels).text


@pytest.mark.parametrize(
    "text",
    [
        "hub/models--org--azr-7b/snapshots",
        "datasets--org--azr_tasks",
        "spaces--AZR--demo",
        "repo_id: azr-7b",
        "repo_id=azr-7b",
        "hf_hub_download(repo_id='org/azr', filename='x')",
        "AutoTokenizer.from_pretrained('azr')",
        'mlflow.register_model("runs:/abc/azr", name)',
        "wandb-artifact://team/azr/model:v1",
        "hf.co/org/azr",
    ],
)
def test_reference_forms_in_isolation_are_untouched(text: str) -> None:
    assert migrate_text(text) == text


def test_local_paths_given_to_loaders_are_migrated() -> None:
    assert migrate_text('from_pretrained("outputs/azr_sft")', dirs=("outputs",)) == (
        'from_pretrained("outputs/crsp_sft")'
    )
    assert migrate_text('from_pretrained("~/ckpt/azr")') == 'from_pretrained("~/ckpt/crsp")'


def test_name_registered_beside_a_published_uri_is_a_label() -> None:
    text = 'mlflow.register_model("runs:/abc/azr", "azr-policy")\nload("models:/azr-policy/1")\n'
    assert migrate_text(text) == text
    assert migrate_text('register_model("runs:/abc/azr", "azr-policy")') == (
        'register_model("runs:/abc/azr", "crsp-policy")'  # nothing published by that name here
    )


def test_labels_need_the_whole_name_and_more_than_the_old_name() -> None:
    text = f"{CODER_HUB_ID} AZR-Coder-7b AZR-Coder-7b-instruct azr-coder-7b.yaml AZR_coder_7B\n"
    assert [label.text for label in find_labels(text, find_protections(text))] == [
        "AZR-Coder-7b",
        "AZR_coder_7B",
    ]
    bare = "see https://wandb.ai/team/azr and AZR\n"  # ``azr`` alone names no artifact
    assert find_labels(bare, find_protections(bare)) == []
    assert name_key("azr-Coder-7B") == name_key("Absolute Zero Reasoner coder.7b")


@pytest.mark.parametrize(
    ("url", "kind"),
    [
        ("https://huggingface.co/org/azr", "Hugging Face URL"),
        ("hf://datasets/org/azr", "Hugging Face URL"),
        ("https://www.wandb.ai/t/azr", "W&B URI"),
        ("wandb://t/azr/runs/1", "W&B URI"),
        ("mlflow-artifacts://host/azr", "MLflow URI"),
        ("https://github.com/org/azr", "URL"),
    ],
)
def test_url_kind(url: str, kind: str) -> None:
    assert url_kind(url) == kind
    assert migrate_text(url) == url
