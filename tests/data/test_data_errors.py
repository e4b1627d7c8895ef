"""Bad data costs only its own rows, is counted and logged, and a file with none is one clear line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from crsp_ops.cli import main as cli
from crsp_ops.config import sync_params
from crsp_ops.data.financebench import load_financebench
from crsp_ops.data.financebench_synthetic import generate_financebench_examples
from crsp_ops.data.limo import load_limo
from crsp_ops.errors import DataError
from crsp_ops.paths import copy_config_tree

REPO = Path(__file__).resolve().parents[2]


def good_rows(n: int) -> list[bytes]:
    return [json.dumps(row.to_row()).encode() + b"\n"
            for row in generate_financebench_examples(count=n, seed=3)]


def test_a_line_of_invalid_utf8_is_skipped_counted_and_logged(tmp_path, caplog):
    path = tmp_path / "fb.jsonl"
    rows = good_rows(3)
    path.write_bytes(rows[0] + b'{"question": "\xff\xfe bad bytes"}\n' + rows[1] + b"[1]\n"
                     + rows[2])
    with caplog.at_level(logging.WARNING):
        result = load_financebench(str(path), synthetic_count=0, seed=0)
    assert len(result.rows) == 3 and result.n_skipped == 2
    assert result.skipped_reasons == {"invalid UTF-8 (byte 14)": 1,
                                      "not a JSON object (list)": 1}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(path) in w and "2 of 5 rows skipped" in w for w in warnings)


def test_a_file_with_no_valid_row_is_a_data_error_naming_file_and_fix(tmp_path):
    path = tmp_path / "limo.jsonl"
    path.write_bytes(b'{"question": "q"}\n\xff\xff\n')
    with pytest.raises(DataError, match="limo.jsonl") as caught:
        load_limo(str(path), synthetic_count=0, seed=0, hub_split="", hub_revision=None)
    message = str(caught.value)
    assert "\n" not in message and "2 skipped" in message and "needs question" in message


@pytest.fixture
def project(tmp_path, monkeypatch):
    copy_config_tree(REPO, tmp_path)
    monkeypatch.setenv("CRSP_OPS_ROOT", str(tmp_path))
    for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID"):
        monkeypatch.delenv(variable, raising=False)
    sync_params(tmp_path)
    return tmp_path


@pytest.mark.parametrize("content", [b"\xff\xfe\n", b'{"financebench_id": 1}\n', b""])
def test_cli_reports_a_data_error_in_one_line_with_rc_2(project, capsys, content):
    bad = project / "bad.jsonl"
    bad.write_bytes(content)
    rc = cli.main(["financebench", "--set", f"financebench.source={bad}",
                   "--set", "tracking.enabled=n"])
    err = capsys.readouterr().err.strip()
    assert rc == 2
    assert err.count("\n") == 0 and "Traceback" not in err
    assert err.startswith("crsp-ops financebench: data error:") and str(bad) in err


def test_cli_names_the_missing_stage_output_with_rc_2(project, capsys):
    rc = cli.main(["evolve", "--set", "tracking.enabled=n"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0, err
    assert "data error" in err and "run the" in err
