#!/usr/bin/env bash
# On a GPU machine (RESULTS.md §5), after `benchmarks/gpu_bundle.sh` here: JoeyNMT and ours
# side by side in one call, SB one epoch (460 updates) each, then beam 5 over test2016.
# About 250 s on an H200. Records go to $OUT.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 KERAS_RNMT_DATA=$PWD/.gpu/data TF_CPP_MIN_LOG_LEVEL=2
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
KERAS_BACKEND=jax python3 -c "import torch, jax, keras, keras_hub, joeynmt, sacrebleu; print('torch', torch.__version__, 'jax', jax.__version__, 'keras', keras.__version__, 'keras_hub', keras_hub.__version__, jax.devices())"
B=.gpu/sb_batches_460.npz
step() { echo "=== $1 $(date +%T)"; }
step joeynmt-float32
timeout 150 python3 benchmarks/gpu_joeynmt.py --work /tmp/jn --out "$OUT/joeynmt.jsonl"
cp /tmp/jn/float32/train.log "$OUT/joeynmt-float32-train.log"
step ours-jax-bahdanau
KERAS_BACKEND=jax timeout 120 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 mixed_bfloat16 --warmup 20 --steps 440 --out "$OUT/ours.jsonl"
step ours-jax-recurrent
KERAS_BACKEND=jax timeout 75 python3 benchmarks/gpu_check.py run $B --attentions recurrent --policies float32 --warmup 20 --steps 440 --out "$OUT/ours.jsonl"
step ours-torch
KERAS_BACKEND=torch timeout 60 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 --warmup 10 --steps 50 --sentences 256 --beam-passes 1 --out "$OUT/ours.jsonl"
step done
