"""One configuration: Kconfig declares, .config chooses, params.yaml records, --set overrides.

The section types of every feature live in this package (``steering_config``,
``evolve_config``, ``selfplay_config`` beside ``sections``), so the features import their
configuration from below and this layer imports none of them.
"""

from crsp_ops.config.errors import ConfigError
from crsp_ops.config.resolve import ResolvedConfig, load_settings, schema_for, sync_params
from crsp_ops.config.sections import Settings

__all__ = [
    "ConfigError", "ResolvedConfig", "Settings", "load_settings", "schema_for", "sync_params",
]
