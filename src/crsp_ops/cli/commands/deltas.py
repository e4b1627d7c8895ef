"""Stage ``deltas``: the initial per-cluster deltas ``{"0": float, ..., "K+1": float}``.

Every cluster id of the clusters stage gets ``deltas.default``, or its value in ``deltas.file``
(a JSON object with exactly the cluster ids), then ``deltas.overrides`` (``ID=VALUE`` items);
the result is checked against the cluster ids (exact key set, finite floats) and clipped to
``[-deltas.clamp, deltas.clamp]`` when the clamp is positive.

Examples:
    crsp-ops deltas --clusters outputs/clusters --out outputs/deltas/deltas_initial.json
    crsp-ops deltas --clusters outputs/clusters --out d.json --set deltas.overrides=0=0.5

Reads: the ``deltas`` section (default, file, overrides, clamp).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.paths import CLUSTERS_DIR, INITIAL_DELTAS

HELP = "write the initial per-cluster deltas, validated against the cluster ids"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``deltas`` arguments."""
    parser.add_argument("--clusters", default=str(CLUSTERS_DIR), help="clusters stage output")
    parser.add_argument("--out", default=str(INITIAL_DELTAS), help="deltas JSON file to write")


def initial_deltas(
    n_clusters: int,
    *,
    default: float,
    file_deltas: Mapping[str, object] | None,
    overrides: Mapping[str, float],
    clamp: float | None,
) -> dict[str, float]:
    """Compose and validate the initial deltas (pure).

    Args:
        n_clusters: cluster ids of the table (K + 2).
        default: value of every cluster when no file is given.
        file_deltas: a user's deltas (exactly the cluster ids), replacing ``default``.
        overrides: ``{cluster id: value}`` applied last; ids must exist.
        clamp: clip to ``[-clamp, clamp]`` (``None``: no clipping).

    Raises:
        ValueError: keys that are not exactly ``0 .. n_clusters-1``, an unknown override id,
            or a value that is not a finite number.

    >>> initial_deltas(3, default=0.0, file_deltas=None, overrides={"0": -9.0}, clamp=5.0)
    {'0': -5.0, '1': 0.0, '2': 0.0}
    """
    from crsp_ops.steering.deltas import cluster_ids, validate_deltas

    ids = cluster_ids(n_clusters)
    base = dict(file_deltas) if file_deltas is not None else dict.fromkeys(ids, default)
    base = validate_deltas(base, n_clusters=n_clusters, clamp=None)
    unknown = sorted(set(overrides) - set(ids))
    if unknown:
        raise ValueError(
            f"deltas.overrides names cluster ids {unknown}, outside 0..{n_clusters - 1}"
        )
    return validate_deltas({**base, **overrides}, n_clusters=n_clusters, clamp=clamp)


def run(args: argparse.Namespace) -> int:
    """Write the initial deltas of the configured clusters."""
    from crsp_ops.config import ConfigError, load_settings
    from crsp_ops.steering.deltas import save_deltas
    from crsp_ops.steering.table import load_table_and_count

    settings = load_settings(overrides=args.overrides).settings.deltas
    _, n_clusters = load_table_and_count(args.clusters)
    file_deltas = None
    if settings.file:
        try:
            file_deltas = json.loads(Path(settings.file).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise ConfigError(
                f"deltas.file={settings.file!r}: cannot read JSON ({error})"
            ) from None
    try:
        deltas = initial_deltas(
            n_clusters, default=settings.default, file_deltas=file_deltas,
            overrides=settings.override_values, clamp=settings.clamp_or_none,
        )
    except ValueError as error:
        source = f"deltas.file={settings.file!r}" if settings.file else "deltas settings"
        raise ConfigError(f"{source}: {error}") from None
    path = save_deltas(args.out, deltas)
    print(f"deltas: {n_clusters} clusters -> {path}")
    return 0


main = stage_main(sys.modules[__name__])
