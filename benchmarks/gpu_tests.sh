#!/usr/bin/env bash
# On a GPU machine (RESULTS.md §5), after `benchmarks/gpu_bundle.sh` here: the tests that need
# no TensorFlow (absent there), under JAX then PyTorch, 8 workers; a line per test (`-v`), so
# a pass stopped by its limit still names its failures. About 400 s on an H200.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 KERAS_RNMT_DATA=$PWD/.gpu/data TF_CPP_MIN_LOG_LEVEL=2
OUT=${OUT:-/tmp/gpu-out}; mkdir -p "$OUT"
# Both need TensorFlow: a Translator from a run folder; the data-parallel worker's tf.data.
DESELECT="--deselect tests/test_precision.py::test_translator_loading_under_an_emulated_policy_warns --deselect tests/models/test_distribution.py::test_data_parallel_on_two_virtual_cpu_devices"
TESTS="tests/attention tests/search tests/models tests/test_precision.py tests/test_log_softmax.py tests/test_matmul_precision.py --ignore tests/models/test_filler_rows.py"
for b in jax torch; do
  echo "=== tests-$b $(date +%T)"
  KERAS_BACKEND=$b timeout "${TEST_LIMIT:-300}" python3 -m pytest -v -p no:cacheprovider -p no:benchmark -n 8 -rf --tb=short $TESTS $DESELECT > "$OUT/tests-$b.log" 2>&1
  echo "rc=$?"
  grep -E '(FAILED|ERROR) ' "$OUT/tests-$b.log" | head -20
  tail -3 "$OUT/tests-$b.log"
done
echo "=== done $(date +%T)"
