"""Repository tools (not installed): the import graph and the dvc.yaml code-deps check."""
