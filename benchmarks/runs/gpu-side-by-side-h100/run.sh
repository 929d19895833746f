# The GPU side-by-side (RESULTS §5): JoeyNMT and ours on one machine, one call.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 KERAS_RNMT_DATA=$PWD/.gpu/data
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv
KERAS_BACKEND=jax python3 -c "import torch, jax, keras, joeynmt; print('torch', torch.__version__, 'jax', jax.__version__, 'keras', keras.__version__)"
B=.gpu/sb_batches_460.npz
step() { echo "=== $1 $(date +%T)"; }
step joeynmt-float32
timeout 170 python3 benchmarks/gpu_joeynmt.py --work /tmp/jn --out $OUT/joeynmt.jsonl
cp /tmp/jn/float32/train.log $OUT/joeynmt-float32.log
step ours-jax-bahdanau
KERAS_BACKEND=jax timeout 120 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 mixed_float16 --warmup 20 --steps 440 --out $OUT/ours.jsonl
step ours-jax-bahdanau-fullfp32
JAX_DEFAULT_MATMUL_PRECISION=highest KERAS_BACKEND=jax timeout 70 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 --warmup 20 --steps 440 --out $OUT/ours-highest.jsonl
step joeynmt-fp16
timeout 150 python3 benchmarks/gpu_joeynmt.py --work /tmp/jn --precisions fp16 --out $OUT/joeynmt.jsonl
cp /tmp/jn/fp16/train.log $OUT/joeynmt-fp16.log
step ours-jax-recurrent
KERAS_BACKEND=jax timeout 70 python3 benchmarks/gpu_check.py run $B --attentions recurrent --policies float32 --warmup 20 --steps 440 --out $OUT/ours.jsonl
step ours-torch
KERAS_BACKEND=torch timeout 60 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 --warmup 10 --steps 50 --sentences 256 --out $OUT/ours.jsonl
step done
