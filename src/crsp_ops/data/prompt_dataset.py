"""A user's training data: JSONL, CSV or Parquet rows with a ``prompt`` column, via ``datasets``.

TRL's conventions: ``prompt`` holds a string or a list of chat messages (``role``,
``content``); every other column (``answer``, ``tests``, ...) travels with the row to the reward
functions. ``load_prompt_rows`` reads a file or a folder of files of one format and checks what
the trainer needs, raising ``DataError`` with one line naming the file and the fix.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import datasets

from crsp_ops.errors import DataError, MissingInputError

BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


@dataclass(frozen=True)
class PromptRows:
    """The rows of a prompt dataset and where they came from."""

    rows: list[dict[str, Any]]
    columns: list[str]
    files: list[Path]
    digest: str  # sha256 of the files' bytes, in name order (the MLflow dataset digest)

    @property
    def source(self) -> str:
        """The path the rows were read from (a folder when there were several files)."""
        return str(self.files[0] if len(self.files) == 1 else self.files[0].parent)


def data_files(path: Path) -> list[Path]:
    """The data file ``path`` names, or the data files of one format in the folder ``path``.

    Raises:
        DataError: nothing there, an unknown format, or a folder mixing formats.
    """
    if path.is_file():
        if path.suffix not in BUILDERS:
            raise DataError(f"{path}: unknown format {path.suffix!r}; use one of "
                            f"{', '.join(sorted(BUILDERS))}")
        return [path]
    if not path.is_dir():
        raise MissingInputError(f"{path}: no such dataset file or folder")
    files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix in BUILDERS)
    formats = {BUILDERS[p.suffix] for p in files}
    if not files:
        raise DataError(f"{path}: no {'/'.join(sorted(BUILDERS))} file in the folder")
    if len(formats) > 1:
        raise DataError(f"{path}: the folder mixes formats ({', '.join(sorted(formats))}); "
                        "keep one format per dataset folder")
    return files


def _digest(files: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for file in files:
        digest.update(file.name.encode())
        digest.update(file.read_bytes())
    return digest.hexdigest()


def check_prompt(value: Any, index: int, source: str) -> None:
    """Raise ``DataError`` unless ``value`` is a non-empty string or chat message list.

    >>> check_prompt([{"role": "user", "content": "hi"}], 0, "d.jsonl")
    >>> try:
    ...     check_prompt(3, 7, "d.jsonl")
    ... except DataError as error:
    ...     print(str(error)[:46], "...", str(error)[-7:])
    d.jsonl: row 7: prompt must be a string or a l ... got int
    """
    if isinstance(value, str) and value.strip():
        return
    if isinstance(value, list) and value and all(
            isinstance(m, Mapping) and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str) for m in value):
        return
    kind = "an empty prompt" if value in ("", [], None) else type(value).__name__
    raise DataError(f"{source}: row {index}: prompt must be a string or a list of "
                    f"{{role, content}} messages, got {kind}")


def _has_data(file: Path) -> bool:
    """False for an empty file, or a CSV holding only its header line."""
    if file.suffix == ".csv":
        with file.open("rb") as handle:
            return sum(1 for line in handle if line.strip()) > 1
    return file.stat().st_size > 0


def _root_cause(error: BaseException) -> str:
    """The innermost cause's type and first line (datasets wraps the parser's own error).

    >>> _root_cause(RuntimeError("wrapper"))
    'RuntimeError: wrapper'
    """
    while error.__cause__ is not None:
        error = error.__cause__
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0] if lines else ''}".rstrip(": ")


def load_prompt_rows(path: str | Path) -> PromptRows:
    """Read and check a prompt dataset (see the module docstring).

    Raises:
        DataError: missing path, unknown format, unreadable file, no ``prompt`` column (the
            columns found are named), no rows, or a row whose prompt is not text or messages.
    """
    files = data_files(Path(path))
    if not any(_has_data(file) for file in files):
        raise DataError(f"{path}: the dataset has no rows")
    bars, verbosity = datasets.is_progress_bar_enabled(), datasets.logging.get_verbosity()
    datasets.disable_progress_bars()  # a bar per file, and its own error log, on stderr
    datasets.logging.set_verbosity(datasets.logging.CRITICAL)
    try:
        dataset = datasets.load_dataset(BUILDERS[files[0].suffix],
                                        data_files=[str(f) for f in files], split="train")
    except Exception as error:  # datasets raises many kinds for a malformed file
        raise DataError(f"{path}: cannot read it as {BUILDERS[files[0].suffix]}: "
                        f"{_root_cause(error)}") from error
    finally:
        datasets.logging.set_verbosity(verbosity)
        if bars:
            datasets.enable_progress_bars()
    columns = list(dataset.column_names)
    if "prompt" not in columns:
        raise DataError(f"{path}: no 'prompt' column (columns found: "
                        f"{', '.join(columns) or 'none'}); name the input column 'prompt'")
    rows = dataset.to_list()
    if not rows:
        raise DataError(f"{path}: the dataset has no rows")
    for index, row in enumerate(rows):
        check_prompt(row["prompt"], index, str(path))
    return PromptRows(rows, columns, files, _digest(files))


def split_rows(rows: Sequence[dict[str, Any]], heldout: int, seed: int
               ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(train, heldout)``: a seeded shuffle, the last ``heldout`` rows held out.

    >>> train, held = split_rows([{"prompt": str(i)} for i in range(10)], 3, seed=0)
    >>> len(train), len(held), not {r["prompt"] for r in train} & {r["prompt"] for r in held}
    (7, 3, True)
    """
    if not 0 <= heldout < len(rows):
        raise DataError(f"train.eval_split_size={heldout} must be >= 0 and leave rows to train "
                        f"on (the dataset has {len(rows)})")
    order = random.Random(seed).sample(list(rows), len(rows))
    cut = len(order) - heldout
    return order[:cut], order[cut:]
