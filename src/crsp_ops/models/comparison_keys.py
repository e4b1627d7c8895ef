"""What an evolve or train run is comparable on: base model, tokenizer, clusters, held-out set.

Every run is tagged with these; the registry moves an alias and ``compare`` ranks runs only
between runs whose keys match. Hashes are of content, so a renamed file is the same input.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from crsp_ops.models.fingerprint import files_sha256, model_fingerprint

MODEL_KEY = "base_model.id"
HELDOUT_KEY = "heldout.sha256"
TABLE_KEY = "clusters.table_sha256"
# the tags two runs must share for their held-out composites to be compared
RANKING_KEYS = (MODEL_KEY, HELDOUT_KEY)


def rows_sha256(rows: Iterable[Any]) -> str:
    """Content hash of a sequence of records (dataclasses or mappings), order included.

    >>> rows_sha256([{"a": 1}]) == rows_sha256([{"a": 1}]) != rows_sha256([{"a": 2}])
    True
    """
    digest = hashlib.sha256()
    for row in rows:
        data = dataclasses.asdict(row) if dataclasses.is_dataclass(row) else dict(row)
        digest.update(json.dumps(data, sort_keys=True, default=str).encode() + b"\n")
    return digest.hexdigest()


def comparison_tags(
    model_path: str | Path | None, *, table_path: str | Path | None = None,
    heldout_rows: Iterable[Any] | None = None,
) -> dict[str, str]:
    """Run tags naming the base model, its tokenizer, the cluster table and the held-out set.

    ``model_path=None`` (a model object, with no files to hash) gives no base-model keys.
    """
    tags = model_fingerprint(model_path).tags() if model_path is not None else {}
    if table_path is not None:
        tags[TABLE_KEY] = files_sha256([Path(table_path)], Path(table_path).parent)
    if heldout_rows is not None:
        rows = list(heldout_rows)
        tags[HELDOUT_KEY] = rows_sha256(rows)
        tags["heldout.size"] = str(len(rows))
    return tags


def same_basis(a: Mapping[str, str], b: Mapping[str, str]) -> bool:
    """Both tag sets name the same base model and held-out set (missing keys never match).

    >>> same_basis({"base_model.id": "m", "heldout.sha256": "h"},
    ...            {"base_model.id": "m", "heldout.sha256": "h", "x": "1"})
    True
    >>> same_basis({"base_model.id": "m"}, {"base_model.id": "m"})
    False
    """
    return all(a.get(k) is not None and a.get(k) == b.get(k) for k in RANKING_KEYS)
