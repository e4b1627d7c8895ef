import os
import stat

import pytest

from crsp_ops.atomic_io import atomic_write_json, atomic_write_text, read_jsonl


def test_failed_write_leaves_target_and_no_temp(tmp_path):
    target = tmp_path / "result.json"
    atomic_write_json(target, {"ok": 1})
    with pytest.raises(ValueError):
        atomic_write_json(target, {"bad": float("nan")})
    assert target.read_text() == '{\n  "ok": 1\n}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["result.json"]


def test_mode_is_kept_or_umask_based(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    atomic_write_text(script, "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    fresh = atomic_write_text(tmp_path / "new.txt", "x")
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~umask


def test_newlines_are_written_verbatim(tmp_path):
    path = atomic_write_text(tmp_path / "crlf.txt", "a\r\nb\n")
    assert path.read_bytes() == b"a\r\nb\n"


def test_read_jsonl_reports_bad_lines(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text('{"a": 1}\nnot json\n[1, 2]\n\n{"a": 2}\n')
    bad = []
    rows = list(read_jsonl(path, on_bad_line=lambda n, why: bad.append((n, why))))
    assert rows == [{"a": 1}, {"a": 2}]
    assert [n for n, _ in bad] == [2, 3]
    with pytest.raises(ValueError, match=r"rows.jsonl:2: not JSON"):
        list(read_jsonl(path))
