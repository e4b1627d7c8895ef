"""Provenance read from git names commits the same way in every checkout."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from benchmarks.provenance import SHORT, added, is_ancestor, line_commits


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A repository with two commits; git's own short hashes are set to 12 digits, as a
    long-lived checkout with many objects would print them."""
    monkeypatch.setenv("GIT_CONFIG_COUNT", "1")
    monkeypatch.setenv("GIT_CONFIG_KEY_0", "core.abbrev")
    monkeypatch.setenv("GIT_CONFIG_VALUE_0", "12")
    _git(tmp_path, "init", "-q")
    for n in (1, 2):
        (tmp_path / "claim.jsonl").write_text("{}\n" * n)
        _git(tmp_path, "add", "claim.jsonl")
        _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", f"c{n}")
    return tmp_path


def test_commits_are_cut_to_a_fixed_length_whatever_git_abbreviates_to(repo: Path):
    first, second = _git(repo, "rev-list", "--reverse", "HEAD").split()
    assert len(_git(repo, "log", "-1", "--format=%h")) == 12
    assert added(Path("claim.jsonl"), repo)[0] == first[:SHORT]
    assert line_commits(Path("claim.jsonl"), repo) == [first[:SHORT], second[:SHORT]]


def test_ancestry_reads_the_cut_commits(repo: Path):
    first, second = _git(repo, "rev-list", "--reverse", "HEAD").split()
    assert is_ancestor(first[:SHORT], second[:SHORT], repo) is True
    assert is_ancestor(second[:SHORT], first[:SHORT], repo) is False
