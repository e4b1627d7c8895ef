"""On a copy of the pages, each way the issue found to fool the registry now fails
``claims_table.py --check``: an interval reordered, a count changed, one of two quotes of the
same number changed, a positive value's sign flipped together with its entry, a verdict word
changed; and a number planted or changed in a design note (docs/design/*.md), which the registry
covers like docs/*.md. The unchanged copy passes."""

from __future__ import annotations

import json
import shutil

import pytest

from lab.places import missing
from lab.registry import REGISTRY, REPO, RESULTS, load_claims

PARTS = ("README.md", "docs", "examples", "lab/claims", "lab/results", str(RESULTS))


@pytest.fixture(scope="module")
def pristine(tmp_path_factory):
    root = tmp_path_factory.mktemp("pages")
    for part in PARTS:
        source, target = REPO / part, root / part
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, ignore=shutil.ignore_patterns("*.png", "*.pt"))
        else:
            shutil.copy(source, target)
    # the same history (read only): declarations, re-looks and hashes are computed from git
    (root / ".git").symlink_to(REPO / ".git")
    return root


@pytest.fixture
def copy(pristine, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(pristine, root, symlinks=True)
    return root


def failures(root):
    try:
        return missing(load_claims(root), root)
    except ValueError as error:  # a registry line its sources refuse
        return [str(error)]


def edit(root, page, old, new, count=1):
    path = root / page
    text = path.read_text(encoding="utf-8")
    assert text.count(old) >= count, f"{old!r} not on {page}"
    path.write_text(text.replace(old, new, count), encoding="utf-8")


def test_the_unchanged_copy_passes(copy):
    assert failures(copy) == []


def test_an_interval_reordered_fails(copy):
    edit(copy, "README.md", "+0.294 [+0.223, +0.364]", "+0.364 [+0.223, +0.294]")
    assert any("is not an interval" in f and "+0.364 [+0.223, +0.294]" in f
               for f in failures(copy))


def test_a_count_changed_fails(copy):
    edit(copy, "README.md", "learned on 3 of 3 seeds", "learned on 4 of 4 seeds")
    found = failures(copy)
    assert any("README.md" in f and "4 of 4" in f for f in found)
    assert any("verdict region of demo_test_3" in f for f in found)


def test_one_of_two_quotes_of_the_same_number_changed_fails(copy):
    # docs/evolve.md quotes −0.0150 twice for the same claim (the table and the verdict); the
    # table's now says −0.0256, a number the same entry lists elsewhere on the page
    edit(copy, "docs/evolve.md", "| 2 of 3 | −0.0150 [−0.0256, −0.0043] |",
         "| 2 of 3 | −0.0256 [−0.0256, −0.0043] |")
    assert any("docs/evolve.md" in f and "-0.0256 is not tied to its place" in f
               for f in failures(copy))


def test_a_positive_values_sign_flipped_with_its_entry_fails(copy):
    edit(copy, "README.md", "+0.294 [+0.223, +0.364]", "−0.294 [−0.300, +0.364]")
    path = copy / REGISTRY
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:
        if "README.md" in row["files"] and "+0.294" in row["numbers"]:
            flip = {"+0.294": "-0.294", "+0.223": "-0.300"}
            row["numbers"] = [flip.get(n, n) for n in row["numbers"]]
            row["quotes"] = [[f, a, flip.get(n, n)] for f, a, n in row["quotes"]]
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert any("not found in its sources" in f and "-0.294" in f for f in failures(copy))


@pytest.mark.parametrize("old, new", [("CRSP not separated from GRPO", "CRSP level with GRPO"),
                                      ("offline behind TPE", "offline ahead of TPE")])
def test_a_verdict_word_changed_fails(copy, old, new):
    page = "README.md" if "CRSP" in old else "docs/evolve.md"
    edit(copy, page, old, new)
    assert any("verdict region" in f and new in f for f in failures(copy))


def test_a_verdict_word_outside_a_region_on_a_result_line_fails(copy):
    edit(copy, "README.md", "Test split: solve-only CRSP learned",
         "Test split: solve-only CRSP was ahead and learned")
    assert any("'ahead' on a result line of crsp_vs_grpo_test" in f for f in failures(copy))


def test_not_a_claim_is_refused_on_a_test_labelled_line(copy):
    path = copy / REGISTRY
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    for row in rows:  # the declared temperature, registered as a setting instead
        if row.get("claim") == "demo_test_3" and row["numbers"] == ["0.7"]:
            row.pop("claim"), row.pop("sources")
            row["split"] = "not a claim: setting"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    assert any("docs/demo.md" in f and "labelled test (demo_test_3)" in f
               for f in failures(copy))


def test_outcome_prose_with_a_number_its_line_lacks_fails(copy):
    path = copy / "lab/claims/outcomes.jsonl"
    text = path.read_text(encoding="utf-8")
    assert "+0.027 (Welch [+0.001, +0.052])" in text
    path.write_text(text.replace("+0.027 (Welch [+0.001, +0.052])",
                                 "+0.027 (Welch [+0.011, +0.052])"))
    assert any("learning_suite_review_sentiment_16_prompts_test shows" in f and "+0.011" in f
               for f in failures(copy))


def test_a_number_planted_in_a_design_note_without_a_source_fails(copy):
    edit(copy, "docs/design/trainer.md", "It is continuous at both breakpoints",
         "On dev it lifted the solve rate by 0.517. It is continuous at both breakpoints")
    assert any(f.startswith("docs/design/trainer.md:") and "0.517 has no source" in f
               for f in failures(copy))


def test_a_design_notes_registered_number_changed_fails(copy):
    # the schedule's end weight (a registered setting) quoted as 0.97 instead of 0.95
    edit(copy, "docs/design/trainer.md", "| 0.8 → 0.95 linearly |", "| 0.8 → 0.97 linearly |")
    found = failures(copy)
    assert any(f.startswith("docs/design/trainer.md:") and "0.97 has no source" in f
               for f in found)
    assert any("0.95 registered in docs/design/trainer.md" in f for f in found)


def test_a_design_note_setting_changed_with_its_entry_fails_against_the_code(copy):
    # page and registry agree on a ratio clip of 0.3; the code's default is 0.2
    edit(copy, "docs/design/platform.md", "n batch mean, ratio clip 0.2",
         "n batch mean, ratio clip 0.3")
    registry = copy / REGISTRY
    rows = [json.loads(line) for line in registry.read_text(encoding="utf-8").splitlines()]
    (row,) = [r for r in rows if any(s[0] == "n batch mean, ratio clip" for s in
                                     r.get("settings", []))]
    row["numbers"].append("0.3")
    for item in row["quotes"] + row["settings"]:
        if "n batch mean, ratio clip" in item:
            item[item.index("0.2")] = "0.3"
    registry.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows),
                        encoding="utf-8")
    assert failures(copy) == [
        "docs/design/platform.md: 0.3 after 'n batch mean, ratio clip' says "
        "config:train.ratio_clip is 0.3, the code has 0.2"]
