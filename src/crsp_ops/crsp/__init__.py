"""CRSP: Cognition via Rewarded Self-Play building blocks (rewards, critique, tasks, TR-RPG)."""
