"""CRSP, Cognition via Rewarded Self-Play: the trainer, by responsibility.

Layers, lowest first; each imports only its own layer and those below (a test checks):
``policy`` and ``executor``; ``rl`` and ``tasks``; ``rewards``; ``selfplay``; ``trainer``;
``user_task``; ``api``, the public Python API.

Design: docs/design/trainer.md#layers.
"""
