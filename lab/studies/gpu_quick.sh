#!/usr/bin/env bash
# One short GPU session (minutes): python -m benchmarks.step memory --device cuda --dtype bf16 on four shapes.
# A CUDA image with torch, transformers and accelerate needs only peft beyond them, unpacked
# from its wheel onto PYTHONPATH (no pip):
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --platform any \
#       -d outputs/gpu_wheels peft
#   bash lab/studies/gpu_quick.sh [OUTDIR]  # device run: carry outputs/gpu_wheels
# Each JSON line goes to OUTDIR/memory_modes_<shape>.jsonl, stderr to OUTDIR/*.err;
# SHAPES="..." picks the shapes, DEV=cpu EXTRA="--rows 1 --prompt 8 --completion 16
# --updates 1" is a dry run.
set -u
OUT=${1:-${OUT:-/tmp/gpu_quick}}
PY=${PYTHON:-python3}
REPO=$(cd "$(dirname "$0")/../.." && pwd)
cd "$REPO"
mkdir -p "$OUT"
DEV=${DEV:-cuda}
LIB=${LIB:-/tmp/crsp_gpu_pylib}
rm -rf "$LIB" && mkdir -p "$LIB"
for whl in outputs/gpu_wheels/*.whl; do "$PY" -m zipfile -e "$whl" "$LIB"; done
export HF_HUB_OFFLINE=1 PYTHONPATH="$REPO:$REPO/src:$LIB${PYTHONPATH:+:$PYTHONPATH}"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
  "$PY" -c "import torch, transformers, accelerate, peft; print('torch', torch.__version__,
'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'accelerate',
accelerate.__version__, 'peft', peft.__version__)"
} > "$OUT/device.txt" 2>&1
for shape in ${SHAPES:-smollm2-shape qwen2-0.5b-shape qwen2.5-1.5b-shape qwen2.5-3b-shape}; do
    echo "python -m benchmarks.step memory --shape $shape --device $DEV --dtype bf16 ${EXTRA:-}" \
        >> "$OUT/device.txt"
    start=$SECONDS
    # shellcheck disable=SC2086
    timeout "${TIMEOUT:-240}" "$PY" -m benchmarks.step memory --shape "$shape" --device "$DEV" \
        --dtype bf16 ${EXTRA:-} > "$OUT/memory_modes_$shape.jsonl" 2> "$OUT/memory_modes_$shape.err"
    echo "  rc=$? wall=$((SECONDS - start))s" >> "$OUT/device.txt"
done
cat "$OUT/device.txt"
