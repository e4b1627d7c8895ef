"""Cluster steering: token→cluster tables, per-cluster deltas and one bias core for every engine.

Submodules are imported explicitly (``crsp_ops.steering.bias`` ...): engine servers import the
adapters, so this package must stay light (no scikit-learn or sentence-transformers here).
"""
