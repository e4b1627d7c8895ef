"""Thin drivers, one per DVC stage / MLproject entry point: I/O around one library call.

Each driver module exposes ``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) ->
int``; heavy imports stay inside ``run`` so ``crsp-ops --help`` is instant.
"""
