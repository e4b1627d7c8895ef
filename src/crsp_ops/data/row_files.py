"""Read raw rows (dicts) from local JSONL, JSON or Parquet files."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from crsp_ops.atomic_io import read_jsonl
from crsp_ops.errors import DataError, MissingInputError

SUPPORTED_SUFFIXES = (".jsonl", ".json", ".parquet")


def iter_raw_rows(path: Path, on_bad_line: Callable[[int, str], None]) -> Iterator[Any]:
    """Yield the raw rows of ``path``; lines that are not JSON objects go to ``on_bad_line``.

    A ``.json`` file holds a list of objects (or ``{"data": [...]}``); its items are yielded as
    they are, so the caller's row parser decides what a non-object item means.

    Raises:
        MissingInputError: the file does not exist.
        DataError: the suffix is not one of ``SUPPORTED_SUFFIXES`` or a JSON file is malformed.
    """
    if not path.is_file():
        raise MissingInputError(f"dataset file not found: {path} (check the configured path)")
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        yield from read_jsonl(path, on_bad_line=on_bad_line)
    elif suffix == ".json":
        yield from _json_items(path)
    elif suffix == ".parquet":
        yield from _parquet_rows(path)
    else:
        raise DataError(
            f"unsupported dataset file {path}: expected one of {', '.join(SUPPORTED_SUFFIXES)}"
        )


def _json_items(path: Path) -> list[Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as error:
        raise DataError(f"{path}: not valid UTF-8 at byte {error.start}; re-save it as UTF-8 "
                        "(or as JSONL, where a bad line is skipped)") from None
    except (json.JSONDecodeError, RecursionError) as error:
        why = getattr(error, "msg", "nested too deeply")
        raise DataError(f"{path}: not valid JSON ({why}); fix the file or use JSONL") from None
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return document["data"]
    if not isinstance(document, list):
        raise DataError(f"{path}: expected a JSON list of rows, got {type(document).__name__}")
    return document


def _parquet_rows(path: Path) -> Iterator[dict]:
    # pyarrow comes with datasets; imported here so JSONL users never pay for it.
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except Exception as error:  # noqa: BLE001 - pyarrow's errors have no common base
        raise DataError(f"{path}: not a readable Parquet file ({error}); re-export it") from None
    yield from table.to_pylist()
