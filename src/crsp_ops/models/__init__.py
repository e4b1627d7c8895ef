"""Base models: the tiny Llama trained on a synthetic chat corpus, or an existing HF model dir."""
