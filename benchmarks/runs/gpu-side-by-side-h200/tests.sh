# The GPU test rerun (RESULTS §5): the device-independent tests, JAX then PyTorch.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=$PWD:/tmp/site PYTHONUNBUFFERED=1 KERAS_RNMT_DATA=$PWD/.gpu/data TF_CPP_MIN_LOG_LEVEL=2
DESELECT="--deselect tests/test_precision.py::test_translator_loading_under_an_emulated_policy_warns --deselect tests/models/test_distribution.py::test_data_parallel_on_two_virtual_cpu_devices"
T="tests/attention tests/search tests/models tests/test_precision.py tests/test_log_softmax.py tests/test_matmul_precision.py --ignore tests/models/test_filler_rows.py"
echo "=== tests-jax $(date +%T)"
KERAS_BACKEND=jax timeout 170 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n 8 -rf --tb=line $T $DESELECT > $OUT/tests-jax.log 2>&1; echo rc=$?
tail -40 $OUT/tests-jax.log
echo "=== tests-torch $(date +%T)"
KERAS_BACKEND=torch timeout 60 python3 -m pytest -q -p no:cacheprovider -p no:benchmark -n 8 -rf --tb=line tests/attention > $OUT/tests-torch.log 2>&1; echo rc=$?
tail -5 $OUT/tests-torch.log
echo "=== done $(date +%T)"
