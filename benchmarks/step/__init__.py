"""One training step, measured four ways: ``python -m benchmarks.step <mode>``."""
