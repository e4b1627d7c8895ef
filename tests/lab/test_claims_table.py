"""The claims registry ties every number README.md, docs/*.md, docs/design/*.md and
examples/*/README.md quote to its place and the claim it comes from, both ways; lab/CLAIMS.md
is generated from it."""

from __future__ import annotations

import json
import shutil

import pytest

from lab.claims_table import how_to_add, render
from lab.places import missing
from lab.quoted_numbers import matches, numbers_in, quotes_in
from lab.registry import REGISTRY, REPO, RESULTS, TABLE, load_claims
from lab.registry_edit import add_entry, prune


def test_every_number_the_pages_quote_is_tied_to_its_place_and_claim():
    missed = missing(load_claims())
    assert not missed, "\n" + how_to_add(missed)


def test_claims_md_is_generated_from_the_registry():
    assert (REPO / TABLE).read_text(encoding="utf-8") == render(load_claims()), (
        f"{TABLE} is stale: run `python -m lab.claims_table --write` and commit it")


def test_what_counts_as_a_number():
    text = """Cut by 26% (−0.023 [+0.013, 0.033]); 1,498.5 tok/s; ±0.3%.
Not: `lr=0.5`, v1.2.3, 0.32.0, Qwen2.5, 0.5B, SmolLM2-1.7B, [x](docs/0.5.md), https://a/1.5
```
0.777
```
Python 3.11 counts (register it as a version)."""
    assert [n for _, n in numbers_in(text)] == [
        "26%", "-0.023", "+0.013", "0.033", "1498.5", "0.3%", "3.11"]
    assert numbers_in(text)[-1][0] == 6  # line numbers survive the blanked code block


def test_a_quoted_number_matches_its_source_as_written_or_rounded_with_its_sign():
    assert matches("0.023", {"0.0227"}) and matches("26%", {"-0.2613"})
    assert matches("0.500", {"0.5"}) and matches("+0.128", {"0.1276"})
    assert not matches("0.4", {"0.46"}) and not matches("0.023", {"0.0236"})
    assert not matches("+0.055", {"-0.055"}) and not matches("-0.0150", {"+0.015"})
    assert matches("-26%", {"-0.2613"}) and matches("0.055", {"-0.055"})


@pytest.fixture
def tiny_repo(tmp_path):
    (tmp_path / "lab/claims").mkdir(parents=True)
    (tmp_path / RESULTS).parent.mkdir(parents=True, exist_ok=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / RESULTS).write_text(
        "## CPU, 2026-11-25\n\n### a run\n\n- abc1234 · `python benchmarks/x.py --y`\n\n"
        '```json\n{"score": 0.4987, "ci95": [0.4627, 0.5348]}\n```\n', encoding="utf-8")
    (tmp_path / "lab/claims/c1.md").write_text("# Claim: c1\n", encoding="utf-8")
    (tmp_path / "lab/claims/c1.jsonl").write_text(
        '{"gain": 0.2938, "ci95": [0.2234, 0.3641]}\n', encoding="utf-8")
    (tmp_path / "README.md").write_text("Solve rate 0.499 [0.463, 0.535].\n", encoding="utf-8")
    return tmp_path


def registry(root, *lines):
    """Write the registry; an entry without ``quotes`` is tied to README.md's places of its
    numbers as the page stands (the places check has its own tests)."""
    readme = (root / "README.md").read_text(encoding="utf-8")
    lines = [line if "quotes" in line else {**line, "quotes": [
        ["README.md", place, n] for _, n, place in quotes_in(readme) if n in line["numbers"]]}
        for line in lines]
    (root / REGISTRY).write_text("".join(json.dumps(line) + "\n" for line in lines),
                                 encoding="utf-8")


DEV = {"files": ["README.md"], "numbers": ["0.499", "0.463", "0.535"], "split": "dev",
       "what": "w", "sources": [[str(RESULTS), "a run"]]}
TEST = {"files": ["README.md"], "numbers": ["+0.294", "+0.223", "+0.364"], "split": "test",
        "claim": "c1", "what": "t", "sources": [["lab/claims/c1.jsonl"]]}


def test_a_claim_is_completed_from_its_section_and_checked_against_it(tiny_repo):
    registry(tiny_repo, DEV)
    (claim,) = load_claims(tiny_repo)
    assert (claim.command, claim.date, claim.commit) == (
        "python benchmarks/x.py --y", "2026-11-25", "abc1234")
    assert missing([claim], tiny_repo) == []
    assert "| dev |  | 0.499, 0.463, 0.535 |" in render([claim], tiny_repo)


def test_a_number_its_source_does_not_hold_is_refused(tiny_repo):
    registry(tiny_repo, {**DEV, "numbers": ["0.499", "0.51"]})
    with pytest.raises(ValueError, match=r"\['0.51'\] not found"):
        load_claims(tiny_repo)


def test_a_result_needs_a_source_a_known_split_and_a_test_entry_its_claim(tiny_repo):
    registry(tiny_repo, {k: v for k, v in DEV.items() if k != "sources"})
    with pytest.raises(ValueError, match="needs its sources"):
        load_claims(tiny_repo)
    registry(tiny_repo, {**DEV, "split": "great"})
    with pytest.raises(ValueError, match="split 'great'"):
        load_claims(tiny_repo)
    registry(tiny_repo, {**TEST, "claim": "nowhere"})
    with pytest.raises(ValueError, match="names its declared claim"):
        load_claims(tiny_repo)


def test_a_quoted_number_with_no_source_fails_naming_file_and_line(tiny_repo):
    registry(tiny_repo, {**DEV, "numbers": ["0.499", "0.463"]})
    missed = missing(load_claims(tiny_repo), tiny_repo)
    assert missed == ["README.md:1: 0.535 has no source: no entry of "
                      "lab/claims/numbers.jsonl naming README.md lists it (as written, "
                      "sign included)"]
    assert "--write" in how_to_add(missed)


def test_a_test_labelled_number_whose_entry_is_dev_fails(tiny_repo):
    # the same digits in a dev entry do not cover a number quoted from the test claim
    (tiny_repo / RESULTS).write_text((tiny_repo / RESULTS).read_text() + "\n0.294 0.223 0.364\n")
    (tiny_repo / "README.md").write_text(
        "Test: +0.294 [+0.223, +0.364] ([results](docs/results.md#c1)).\n", encoding="utf-8")
    registry(tiny_repo, {**DEV, "numbers": ["+0.294", "+0.223", "+0.364"]})
    missed = missing(load_claims(tiny_repo), tiny_repo)
    assert len(missed) == 6  # each quote without its place, and each entry number unquoted
    assert all("labelled test (c1) but its entries are dev" in m for m in missed[:3])
    registry(tiny_repo, TEST)
    assert missing(load_claims(tiny_repo), tiny_repo) == []


def test_a_test_number_quoted_without_its_label_fails(tiny_repo):
    (tiny_repo / "README.md").write_text("Gain +0.294 [+0.223, +0.364].\n", encoding="utf-8")
    registry(tiny_repo, TEST)
    missed = missing(load_claims(tiny_repo), tiny_repo)
    assert len(missed) == 6 and all("not labelled" in m for m in missed[:3])
    (tiny_repo / "README.md").write_text(
        "<!-- test: c1 -->\nGain +0.294 [+0.223,\n+0.364].\n<!-- /test -->\n", encoding="utf-8")
    registry(tiny_repo, TEST)  # tied to the wrapped places
    assert missing(load_claims(tiny_repo), tiny_repo) == []


def test_an_entry_nothing_quotes_any_more_fails_and_prune_drops_it(tiny_repo):
    registry(tiny_repo, DEV, {**DEV, "numbers": ["0.4987"], "what": "gone"})
    missed = missing(load_claims(tiny_repo), tiny_repo)
    assert missed == [f"{REGISTRY}:2: 0.4987 (gone) is quoted by none of README.md: run "
                      "--prune, or quote it"]
    assert prune(tiny_repo) == 1
    assert missing(load_claims(tiny_repo), tiny_repo) == []
    assert len((tiny_repo / REGISTRY).read_text().splitlines()) == 1


def test_a_sign_flipped_quote_fails(tiny_repo):
    (tiny_repo / RESULTS).write_text((tiny_repo / RESULTS).read_text() + "\ngain -0.0550\n")
    (tiny_repo / "README.md").write_text("A gain of +0.055.\n")
    registry(tiny_repo, {**DEV, "numbers": ["+0.055"]})
    with pytest.raises(ValueError, match=r"\['\+0.055'\] not found"):
        load_claims(tiny_repo)


def test_editing_a_readme_number_without_its_source_fails(tmp_path):
    """On a copy of this repository: change one headline number of README.md, and the check
    names it (its old value then has no place quoting it either)."""
    for part in ("README.md", "docs", "examples", "lab/claims", "lab/results",
                 str(RESULTS)):
        source, target = REPO / part, tmp_path / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    (tmp_path / ".git").symlink_to(REPO / ".git")  # the same history, read only
    before = missing(load_claims(tmp_path), tmp_path)
    assert not [m for m in before if m.startswith("README.md:")]
    readme = (tmp_path / "README.md").read_text(encoding="utf-8")
    assert "+0.294" in readme
    (tmp_path / "README.md").write_text(readme.replace("+0.294", "+0.394"), encoding="utf-8")
    missed = [m for m in missing(load_claims(tmp_path), tmp_path) if m not in before]
    assert any(m.startswith("README.md:") and "+0.394 has no source" in m for m in missed)
    assert any("+0.294 registered in README.md" in m and "is not quoted there" in m
               for m in missed)


def test_add_registers_a_files_missing_numbers_only_if_its_source_holds_them(tiny_repo):
    registry(tiny_repo)
    before = (tiny_repo / REGISTRY).read_text()
    with pytest.raises(ValueError, match="not found"):
        add_entry("README.md", "dev", "w", [[str(RESULTS)]], ["0.499", "0.51"], root=tiny_repo)
    assert (tiny_repo / REGISTRY).read_text() == before
    line = add_entry("README.md", "dev", "w", [[str(RESULTS), "a run"]], None, root=tiny_repo)
    assert line["numbers"] == ["0.463", "0.499", "0.535"]
    assert missing(load_claims(tiny_repo), tiny_repo) == []
