"""Learning curves, one tool: ``python -m benchmarks.learning curve|seeds|suite``."""
