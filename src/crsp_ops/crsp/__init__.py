"""CRSP: Cognition via Rewarded Self-Play building blocks (rewards, critique, tasks, TR-RPG)."""

# crsp_ops.config.sections imports our selfplay_config, which needs crsp_ops.config.fields:
# loading the config package first makes that cycle resolve whichever side is imported first.
import crsp_ops.config  # noqa: F401
