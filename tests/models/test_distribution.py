"""Data-parallel training: 2 virtual CPU devices, same first step as one device, falling loss."""

import json
import os
import subprocess
import sys

import keras
import pytest

from keras_rnmt.training.config import TrainConfig
from keras_rnmt.training.distribution import distribution_scope

BACKEND = keras.backend.backend()
WORKER = os.path.join(os.path.dirname(__file__), "data_parallel_worker.py")


def test_unknown_distribute_lists_valid_choices():
    with pytest.raises(ValueError, match="Unknown distribute 'ddp'. Valid choices: 'none', 'data-parallel'"):
        TrainConfig(distribute="ddp")
    with pytest.raises(ValueError, match="Unknown distribute 'ddp'"):
        with distribution_scope("ddp"):
            pass


def test_none_trains_on_the_default_device():
    with distribution_scope("none", batch_size=33) as replicas:
        assert replicas.num_replicas == 1 and replicas.engine is None


@pytest.mark.heavy
def test_data_parallel_on_two_virtual_cpu_devices(tmp_path):
    if BACKEND == "torch":
        # Keras has no distribution engine for PyTorch: asking for one is a clear error.
        with pytest.raises(ValueError, match="not supported under the 'torch' backend"):
            with distribution_scope("data-parallel", batch_size=32):
                pass
        return
    out = tmp_path / "report.json"
    env = dict(os.environ, KERAS_BACKEND=BACKEND, JAX_PLATFORMS="cpu", CUDA_VISIBLE_DEVICES="",
               XLA_FLAGS=(os.environ.get("XLA_FLAGS", "")
                          + " --xla_force_host_platform_device_count=2").strip())
    # The timeout only guards against a hung worker: at nice 19 beside a training run on
    # both cores it took more than 300 s (2026-12-02), against well under a minute alone.
    process = subprocess.run([sys.executable, WORKER, str(out), str(tmp_path / "run")],
                             env=env, capture_output=True, text=True, timeout=1200)
    assert process.returncode == 0, process.stdout[-3000:] + process.stderr[-5000:]
    report = json.loads(out.read_text())

    # (a) two devices, each holding a copy of the weights.
    assert report["keeps_freed_memory"]
    assert report["replicas"] == 2
    assert len(report["variable_devices"]) == 2, report["variable_devices"]
    if BACKEND == "tensorflow":
        assert report["num_replicas_in_sync"] == 2
    assert "must be a multiple of 2" in report["odd_batch_error"]
    # (b) the same losses over three plain SGD steps as on one device, from the same weights
    # on the same batch (so the gradient is averaged over the replicas, not summed), and
    # falling (measured 3.178, 3.158, 3.141).
    single, parallel = report["single_losses"], report["parallel_losses"]
    assert parallel == pytest.approx(single, rel=1e-4), (single, parallel)
    assert parallel[2] < parallel[1] < parallel[0], parallel
    # (c) the training driver with distribute="data-parallel" trains (finite, falling loss
    # over 2 epochs of 2 Adam steps), evaluates and records it, on token batches (a 400-token
    # budget, each batch an even number of sentences; measured 3.80 -> 3.71 under JAX).
    run = report["train_and_evaluate_tokens"]
    assert run["replicas"] == 2 and run["test_bleu_finite"]
    assert len(run["losses"]) == 2 and run["losses"][1] < run["losses"][0], run["losses"]
