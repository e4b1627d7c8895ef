"""One configuration: Kconfig declares, .config chooses, params.yaml records, --set overrides.

Names are imported lazily: section dataclasses beside their features import
``crsp_ops.config.fields`` / ``errors``, and an eager import of ``resolve`` here would cycle
back into them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS: dict[str, str] = {
    "ConfigError": "crsp_ops.config.errors",
    "ResolvedConfig": "crsp_ops.config.resolve",
    "load_settings": "crsp_ops.config.resolve",
    "schema_for": "crsp_ops.config.resolve",
    "sync_params": "crsp_ops.config.resolve",
    "Settings": "crsp_ops.config.sections",
}

__all__ = [
    "ConfigError",
    "ResolvedConfig",
    "load_settings",
    "schema_for",
    "sync_params",
    "Settings",
]

if TYPE_CHECKING:
    from crsp_ops.config.errors import ConfigError
    from crsp_ops.config.resolve import ResolvedConfig, load_settings, schema_for, sync_params
    from crsp_ops.config.sections import Settings


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'crsp_ops.config' has no attribute {name!r}")
    return getattr(importlib.import_module(_EXPORTS[name]), name)
