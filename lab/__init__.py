"""The lab: claims declared before their runs, result lines, figures, the notebook (README.md)."""
