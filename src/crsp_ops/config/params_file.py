"""Read and write params.yaml: the resolved values DVC tracks, one section per stage."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from crsp_ops.atomic_io import atomic_write_text
from crsp_ops.config.errors import ConfigError

_SHA_LINE = re.compile(r"^# source-sha256: ([0-9a-f]{64}|none)$", re.MULTILINE)

HEADER = """\
# Written by `crsp-ops config sync` from Kconfig (defaults) and .config (your choices).
# DVC tracks this file: what a stage runs with is what is written here. Change options with
# `make menuconfig` (or edit .config) and `crsp-ops config sync`; for one run, use --set.
# source-sha256: {sha}
"""


def read_params(path: Path) -> tuple[dict[str, dict[str, Any]], str | None]:
    """Return ``({section: {key: value}}, recorded .config sha or "none" or None)``."""
    text = path.read_text(encoding="utf-8")
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ConfigError(f"{path}: not valid YAML: {error}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    for section, values in data.items():
        if not isinstance(values, dict):
            raise ConfigError(f"{path}: section {section!r} must be a mapping of options")
    match = _SHA_LINE.search(text)
    return data, (match.group(1) if match else None)


def write_params(path: Path, sections: dict[str, dict[str, Any]], source_sha: str | None) -> Path:
    """Write ``sections`` atomically with the header recording which .config they came from."""
    body = yaml.safe_dump(sections, sort_keys=False, default_flow_style=False, width=100)
    return atomic_write_text(path, HEADER.format(sha=source_sha or "none") + body)
