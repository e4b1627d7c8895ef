"""Evolution of per-cluster steering deltas: reflector, Optuna baseline, offline proposer."""
