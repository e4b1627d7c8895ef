"""crsp_ops: steering-delta evolution and CRSP self-play, tracked end to end.

``from crsp_ops import CRSPTrainer, CRSPConfig``: TRL's ``GRPOTrainer`` / ``GRPOConfig``
signatures over the CRSP trainer (imported on first use: ``import crsp_ops`` stays light).
"""

__version__ = "0.1.0"
__all__ = ["CRSPConfig", "CRSPTrainer"]


def __getattr__(name: str):
    if name == "CRSPTrainer":
        from crsp_ops.crsp.api import CRSPTrainer

        return CRSPTrainer
    if name == "CRSPConfig":
        from crsp_ops.crsp.trainer.arguments import CRSPConfig

        return CRSPConfig
    raise AttributeError(f"module 'crsp_ops' has no attribute {name!r}")
