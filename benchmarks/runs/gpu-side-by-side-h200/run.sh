# The GPU check (RESULTS §5): JoeyNMT and ours side by side on one machine, then the
# device-independent tests on the GPU under JAX and PyTorch; one call.
set -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 KERAS_RNMT_DATA=$PWD/.gpu/data TF_CPP_MIN_LOG_LEVEL=2
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
KERAS_BACKEND=jax python3 -c "import torch, jax, keras, keras_hub, joeynmt, sacrebleu; print('torch', torch.__version__, 'jax', jax.__version__, 'keras', keras.__version__, 'keras_hub', keras_hub.__version__, jax.devices())"
B=.gpu/sb_batches_460.npz
step() { echo "=== $1 $(date +%T)"; }
step joeynmt-float32
timeout 150 python3 benchmarks/gpu_joeynmt.py --work /tmp/jn --out $OUT/joeynmt.jsonl
cp /tmp/jn/float32/train.log $OUT/joeynmt-float32-train.log
step ours-jax-bahdanau
KERAS_BACKEND=jax timeout 120 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 mixed_bfloat16 --warmup 20 --steps 440 --out $OUT/ours.jsonl
step ours-jax-recurrent
KERAS_BACKEND=jax timeout 75 python3 benchmarks/gpu_check.py run $B --attentions recurrent --policies float32 --warmup 20 --steps 440 --out $OUT/ours.jsonl
step ours-torch
KERAS_BACKEND=torch timeout 60 python3 benchmarks/gpu_check.py run $B --attentions bahdanau --policies float32 --warmup 10 --steps 50 --sentences 256 --beam-passes 1 --out $OUT/ours.jsonl
# Both need TensorFlow, absent there: a Translator from a run folder; the data-parallel worker's tf.data.
DESELECT="--deselect tests/test_precision.py::test_translator_loading_under_an_emulated_policy_warns --deselect tests/models/test_distribution.py::test_data_parallel_on_two_virtual_cpu_devices"
T="tests/attention tests/search tests/models tests/test_precision.py tests/test_log_softmax.py tests/test_matmul_precision.py --ignore tests/models/test_filler_rows.py"
for b in jax torch; do
  step tests-$b
  KERAS_BACKEND=$b timeout 120 python3 -m pytest -q -p no:cacheprovider -n 8 $T $DESELECT 2>&1 | tee $OUT/tests-$b.log | tail -25
done
step done
