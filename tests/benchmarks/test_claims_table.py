"""benchmarks/CLAIMS.md lists every number README.md and docs/*.md quote, each in its source."""

from __future__ import annotations

import json

import pytest

from benchmarks.claims_table import (
    REPO,
    TABLE,
    add_entry,
    how_to_add,
    load_claims,
    matches,
    missing,
    numbers_in,
    render,
)


def test_every_number_the_readme_and_docs_quote_is_in_claims_md():
    missed = missing(load_claims())
    assert not missed, "\n" + how_to_add(missed)


def test_claims_md_is_generated_from_the_registry():
    assert (REPO / TABLE).read_text(encoding="utf-8") == render(load_claims()), (
        f"{TABLE} is stale: run `python benchmarks/claims_table.py --write` and commit it")


def test_what_counts_as_a_number():
    text = """Cut by 26% (−0.023 [+0.013, 0.033]); 1,498.5 tok/s; ±0.3%.
Not: `lr=0.5`, v1.2.3, 0.32.0, Qwen2.5, 0.5B, SmolLM2-1.7B, [x](docs/0.5.md), https://a/1.5
```
0.777
```
Python 3.11 counts (register it as a version)."""
    assert [n for _, n in numbers_in(text)] == [
        "26%", "0.023", "0.013", "0.033", "1498.5", "0.3%", "3.11"]
    assert numbers_in(text)[-1][0] == 6  # line numbers survive the blanked code block


def test_a_quoted_number_matches_its_source_as_written_or_rounded():
    assert matches("0.023", {"0.0227"}) and matches("26%", {"-0.2613"})
    assert matches("0.500", {"0.5"}) and matches("+0.128", {"0.1276"})
    assert not matches("0.4", {"0.46"}) and not matches("0.023", {"0.0236"})


@pytest.fixture
def tiny_repo(tmp_path):
    (tmp_path / "benchmarks/claims").mkdir(parents=True)
    (tmp_path / "docs").mkdir()
    (tmp_path / "benchmarks/RESULTS.md").write_text(
        "## CPU, 2026-11-25\n\n### a run\n\n- abc1234 · `python benchmarks/x.py --y`\n\n"
        '```json\n{"score": 0.4987, "ci95": [0.4627, 0.5348]}\n```\n', encoding="utf-8")
    (tmp_path / "README.md").write_text("Solve rate 0.499 [0.463, 0.535].\n", encoding="utf-8")
    return tmp_path


def registry(root, *lines):
    (root / "benchmarks/claims/numbers.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


def test_a_claim_is_completed_from_its_section_and_checked_against_it(tiny_repo):
    registry(tiny_repo, {"files": ["README.md"], "numbers": ["0.499", "0.463", "0.535"],
                         "split": "dev", "what": "w",
                         "sources": [["benchmarks/RESULTS.md", "a run"]]})
    (claim,) = load_claims(tiny_repo)
    assert (claim.command, claim.date, claim.commit) == (
        "python benchmarks/x.py --y", "2026-11-25", "abc1234")
    assert missing([claim], tiny_repo) == []
    assert "| dev | 0.499, 0.463, 0.535 |" in render([claim], tiny_repo)


def test_a_number_its_source_does_not_hold_is_refused(tiny_repo):
    registry(tiny_repo, {"files": ["README.md"], "numbers": ["0.499", "0.51"], "split": "dev",
                         "what": "w", "sources": [["benchmarks/RESULTS.md", "a run"]]})
    with pytest.raises(ValueError, match=r"\['0.51'\] not found"):
        load_claims(tiny_repo)


def test_a_result_needs_a_source_and_a_known_split(tiny_repo):
    registry(tiny_repo, {"files": ["README.md"], "numbers": ["0.499"], "split": "dev",
                         "what": "w"})
    with pytest.raises(ValueError, match="needs its sources"):
        load_claims(tiny_repo)
    registry(tiny_repo, {"files": ["README.md"], "numbers": ["0.499"], "split": "great",
                         "what": "w"})
    with pytest.raises(ValueError, match="split 'great'"):
        load_claims(tiny_repo)


def test_the_failure_names_the_file_the_line_and_how_to_add_it(tiny_repo):
    registry(tiny_repo, {"files": ["README.md"], "numbers": ["0.499", "0.463"], "split": "dev",
                         "what": "w", "sources": [["benchmarks/RESULTS.md", "a run"]]})
    missed = missing(load_claims(tiny_repo), tiny_repo)
    assert missed == [("README.md", 1, "0.535")]
    message = how_to_add(missed)
    assert "README.md:1: 0.535 is not in benchmarks/CLAIMS.md" in message
    assert "benchmarks/claims/numbers.jsonl" in message and "--write" in message


def test_add_registers_a_files_missing_numbers_only_if_its_source_holds_them(tiny_repo):
    registry(tiny_repo)
    before = (tiny_repo / "benchmarks/claims/numbers.jsonl").read_text()
    with pytest.raises(ValueError, match="not found"):
        add_entry("README.md", "dev", "w", [["benchmarks/RESULTS.md"]], ["0.499", "0.51"],
                  root=tiny_repo)
    assert (tiny_repo / "benchmarks/claims/numbers.jsonl").read_text() == before
    line = add_entry("README.md", "dev", "w", [["benchmarks/RESULTS.md", "a run"]], None,
                     root=tiny_repo)
    assert line["numbers"] == ["0.463", "0.499", "0.535"]
    assert missing(load_claims(tiny_repo), tiny_repo) == []
