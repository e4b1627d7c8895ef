"""The policy being trained and where it runs: LoRA, accelerate, FSDP2, generation backends."""
