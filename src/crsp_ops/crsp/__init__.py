"""CRSP, Cognition via Rewarded Self-Play: the trainer, by responsibility.

Layers, lowest first; a subpackage imports only from those below it (checked by a test):

- ``policy/``   the model being trained and where it runs: LoRA and export, ``accelerate``,
  FSDP2 sharding, metrics reduced over ranks, the generation backend the policy samples from.
- ``executor/`` the sandbox that runs proposed programs, never in the trainer's process.
- ``rl/``       the maths of one update: advantages, the loss registry (TR-RPG, TRR++),
  loss aggregation, reference KL, token log-probs, the learning-rate schedule, the update.
- ``tasks/``    what a task is: task types, prompts, answer checking, proposal validation,
  starter tasks and the task sources (edge math, LIMO).
- ``rewards/``  reward formulas, the alpha schedule, user reward functions and the weighted
  ``RewardSet`` every solve step scores with.
- ``selfplay/`` one step's episode: propose, solve, critique, the task buffers, dynamic
  sampling, rollouts from scored samples, LIMO seeding (SFT).
- ``trainer/``  the loop: options from the settings, the step, evaluation, checkpoints, export.
- ``user_task`` and ``api``: a user's dataset and reward files, and the public Python API.
"""
