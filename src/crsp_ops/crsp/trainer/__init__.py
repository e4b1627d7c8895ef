"""The training loop: options from settings, the step, evaluation, checkpoints and export."""
