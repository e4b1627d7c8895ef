"""One configuration: Kconfig declares, .config chooses, params.yaml records, --set overrides."""

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.resolve import ResolvedConfig, load_settings, schema_for, sync_params
from crsp_ops.config.sections import Settings

__all__ = ["ConfigError", "ResolvedConfig", "Settings", "load_settings", "schema_for", "sync_params"]
