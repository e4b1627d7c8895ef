"""``python -m benchmarks.step <mode>``: the CRSP training step, measured four ways."""

import sys

from benchmarks.modes import dispatch

MODES = {
    "time": ("benchmarks.step.timing", "CRSP's step beside TRL's GRPO step, like for like "
             "(was train_step.py)"),
    "profile": ("benchmarks.step.profiling", "torch.profiler's top operators of CRSP steps "
                "(was profile_step.py)"),
    "scaling": ("benchmarks.step.scaling", "tokens/s with 1 vs N processes on one global batch "
                "(was train_scaling.py)"),
    "memory": ("benchmarks.step.memory", "peak memory and step time of the memory modes "
               "(was memory_modes.py)"),
}

if __name__ == "__main__":
    sys.exit(dispatch("benchmarks.step", MODES))
