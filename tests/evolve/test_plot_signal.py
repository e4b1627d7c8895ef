"""A SIGINT while the plot is being written: a valid PNG or none, never an abort or a temp file."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import textwrap

from PIL import Image

from crsp_ops.atomic_io import TEMP_GLOB, atomic_path, remove_stale_temp_files

WRITER = textwrap.dedent("""
    import sys
    from crsp_ops.evolve.plot import EvolutionPlot
    from crsp_ops.interrupts import install_handlers

    install_handlers()  # as the CLI does
    plot = EvolutionPlot()
    print("ready", flush=True)
    try:
        while True:
            plot.save(sys.argv[1])
    except KeyboardInterrupt:
        sys.exit(130)
""")


def test_sigint_during_plot_writes_leaves_a_valid_png_or_none(tmp_path):
    rng = random.Random(30)
    for attempt in range(4):
        png = tmp_path / f"try{attempt}" / "evolution_lengths.png"
        proc = subprocess.Popen([sys.executable, "-c", WRITER, str(png)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout.readline().strip() == "ready"
        proc.stdout.close()
        try:
            proc.wait(timeout=rng.uniform(0.05, 0.6))
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGINT)
        stderr = proc.communicate(timeout=60)[1]
        assert proc.returncode == 130, stderr  # not -6 (C++ terminate) nor a traceback
        assert "terminate called" not in stderr
        if png.exists():
            with Image.open(png) as image:
                image.verify()
        assert not list(png.parent.glob(TEMP_GLOB))


def test_every_writer_temp_name_matches_the_cleanup(tmp_path):
    kept = tmp_path / "kept"
    kept.mkdir()
    for name in ["deltas_best.json", "history.jsonl", "evolution_lengths.png", "kmeans.joblib"]:
        for suffix in ("", ".png"):
            with atomic_path(tmp_path / name, suffix=suffix) as tmp:
                (kept / tmp.name).write_bytes(b"half")  # what a SIGKILL mid-write leaves
    leftovers = sorted(kept.iterdir())
    assert len(leftovers) == 8
    assert sorted(remove_stale_temp_files(kept)) == leftovers
    assert not list(kept.iterdir())
