import json

import pytest

from crsp_ops.crsp.tasks.limo import limo_file


def test_stage_directory_gives_its_rows_file_beside_stats(tmp_path):
    (tmp_path / "limo.jsonl").write_text(json.dumps({"question": "q", "solution": "s", "answer": "1"}))
    (tmp_path / "stats.json").write_text("{}")
    assert limo_file(tmp_path) == tmp_path / "limo.jsonl"


def test_directory_with_one_other_rows_file_and_ambiguous_directory(tmp_path):
    (tmp_path / "rows.parquet").write_bytes(b"")
    assert limo_file(tmp_path) == tmp_path / "rows.parquet"
    (tmp_path / "more.jsonl").write_text("")
    with pytest.raises(FileNotFoundError, match="expected exactly one"):
        limo_file(tmp_path)
