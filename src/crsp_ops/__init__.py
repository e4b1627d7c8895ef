"""crsp_ops: steering-delta evolution and CRSP self-play, tracked end to end."""
__version__ = "0.1.0"
