"""Per-cluster steering deltas: ``{"0": float, ..., "K+1": float}`` on disk, a list in engines.

The JSON object form is what users, the reflector and ``deltas_*.json`` files use; its keys
are the cluster ids as strings. Engines take the ordered list (index = cluster id).
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import torch

from crsp_ops.atomic_io import atomic_write_json

Deltas = dict[str, float]


def cluster_ids(n_clusters: int) -> list[str]:
    """Return the delta keys for ``n_clusters`` cluster ids.

    >>> cluster_ids(4)
    ['0', '1', '2', '3']
    """
    if n_clusters < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    return [str(i) for i in range(n_clusters)]


def validate_deltas(raw: Mapping[str, object], *, n_clusters: int, clamp: float | None) -> Deltas:
    """Check deltas against the cluster ids and return them ordered by id.

    Args:
        raw: a mapping from cluster id (string) to number.
        n_clusters: the number of cluster ids; the key set must be exactly ``"0" .. "K+1"``.
        clamp: if given, clip every value to ``[-clamp, clamp]``.

    Raises:
        ValueError: missing or unexpected keys, or a value that is not a finite real number.

    >>> validate_deltas({"1": 2, "0": -9.5}, n_clusters=2, clamp=5.0)
    {'0': -5.0, '1': 2.0}
    """
    if not isinstance(raw, Mapping):
        raise ValueError(f"deltas must be a JSON object, got {type(raw).__name__}")
    expected = cluster_ids(n_clusters)
    keys = {str(key) for key in raw}
    if keys != set(expected) or len(keys) != len(raw):
        missing = sorted(set(expected) - keys, key=int)
        extra = sorted(keys - set(expected))
        raise ValueError(f"deltas keys must be exactly 0..{n_clusters - 1}: "
                         f"missing {missing}, unexpected {extra}")
    if clamp is not None and not (math.isfinite(clamp) and clamp > 0):
        raise ValueError(f"clamp must be a positive finite number, got {clamp}")
    values = {str(key): value for key, value in raw.items()}
    out: Deltas = {}
    for key in expected:
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"delta of cluster {key} must be a number, got {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"delta of cluster {key} must be finite, got {value!r}")
        value = float(value)
        out[key] = value if clamp is None else min(max(value, -clamp), clamp)
    return out


def deltas_from_values(values: Sequence[float]) -> Deltas:
    """Turn an ordered list (index = cluster id) into the JSON form.

    >>> deltas_from_values([0.5, -1])
    {'0': 0.5, '1': -1.0}
    """
    return validate_deltas(dict(enumerate(values)), n_clusters=len(values), clamp=None)


def deltas_to_list(deltas: Mapping[str, float]) -> list[float]:
    """Return the values ordered by cluster id (the form engines take).

    >>> deltas_to_list({"1": 2.0, "0": -1.0})
    [-1.0, 2.0]
    """
    return list(validate_deltas(deltas, n_clusters=len(deltas), clamp=None).values())


def deltas_to_tensor(deltas: Mapping[str, float]) -> torch.Tensor:
    """Return the values ordered by cluster id as a float32 tensor ``(K,)``."""
    return torch.tensor(deltas_to_list(deltas), dtype=torch.float32)


def load_deltas(path: str | os.PathLike, *, n_clusters: int, clamp: float | None) -> Deltas:
    """Read and validate a deltas JSON file (see ``validate_deltas``)."""
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path}: not JSON ({error.msg})") from error
    try:
        return validate_deltas(raw, n_clusters=n_clusters, clamp=clamp)
    except ValueError as error:
        raise ValueError(f"{path}: {error}") from error


def save_deltas(path: str | os.PathLike, deltas: Mapping[str, float]) -> Path:
    """Write deltas atomically, keys ordered by cluster id; return the path."""
    ordered = validate_deltas(deltas, n_clusters=len(deltas), clamp=None)
    return atomic_write_json(path, ordered)
