"""CRSP, Cognition via Rewarded Self-Play: the trainer, by responsibility.

Subpackages, lowest layer first (each imports only from those below it; a test checks):
``policy``, ``executor``, ``rl``, ``tasks``, ``rewards``, ``selfplay``, ``trainer``; then
``user_task`` and ``api``, the public Python API.

Design: docs/design/trainer.md#layers.
"""
