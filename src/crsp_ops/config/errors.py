"""The one error type of configuration problems."""


class ConfigError(ValueError):
    """Bad configuration input; the message names the key, the value and the file."""
