"""Rewards: the built-in formulas, the alpha schedule, user reward functions and ``RewardSet``."""
