"""Data-parallel training on 2 virtual CPU devices; run by test_distribution.py in a subprocess.

    KERAS_BACKEND=jax XLA_FLAGS=--xla_force_host_platform_device_count=2 \
        python tests/models/data_parallel_worker.py result.json run_dir

The device split has to happen before the backend starts, hence a process of its own: JAX
reads `XLA_FLAGS` at import (the caller sets it); TensorFlow's CPU is split below, before
anything initialises it. Writes a JSON report that the test checks.
"""

import csv
import json
import os
import sys

BACKEND = os.environ["KERAS_BACKEND"]
if BACKEND == "tensorflow":
    import tensorflow as tf

    _cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(
        _cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from model_helpers import reverse_copy_batch, small_model  # noqa: E402

from keras_rnmt.malloc import keep_freed_memory_for_backend  # noqa: E402
from keras_rnmt.training.distribution import distribution_scope  # noqa: E402
from keras_rnmt.training.losses import MaskedCrossEntropy  # noqa: E402


def variable_devices(variable):
    """The devices holding a copy of `variable`."""
    if BACKEND == "jax":
        return sorted(str(d) for d in variable.value.sharding.device_set)
    return sorted(v.device for v in variable.value.values)  # a tf MirroredVariable


def sgd_steps(model, weights, x, y, steps):
    """Losses of `steps` plain SGD steps from `weights` on one batch (32 sentences).

    Each loss is computed before its step's update. Plain SGD, not Adam (whose first steps
    ignore the gradient's scale), so a gradient summed instead of averaged over the replicas
    would show from the second loss on.
    """
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=MaskedCrossEntropy())
    return [float(model.train_on_batch(x, y)) for _ in range(steps)]


def main(out_path, run_dir):
    # As `keras-rnmt train --distribute data-parallel` runs: under JAX with the CPU dispatch
    # synchronous (keras_rnmt/malloc.py).
    report = {"backend": BACKEND, "keeps_freed_memory": keep_freed_memory_for_backend()}
    # Every sentence has 7 words, so both halves of the batch hold the same number of real
    # target tokens and TensorFlow's mean of per-replica means equals the global mean.
    source, target_in, target_out = reverse_copy_batch(n=32, seed=1, min_length=7)
    x, y = (source, target_in), target_out

    keras.utils.set_random_seed(0)
    single = small_model(attention="bahdanau")
    weights = single.get_weights()
    report["single_losses"] = sgd_steps(single, weights, x, y, steps=3)

    with distribution_scope("data-parallel", batch_size=32) as replicas:
        report["replicas"] = replicas.num_replicas
        model = small_model(attention="bahdanau")
        report["parallel_losses"] = sgd_steps(model, weights, x, y, steps=3)
        report["variable_devices"] = variable_devices(model.trainable_variables[0])
        if BACKEND == "tensorflow":
            report["num_replicas_in_sync"] = model.distribute_strategy.num_replicas_in_sync
    try:
        with distribution_scope("data-parallel", batch_size=33):
            pass
    except ValueError as error:
        report["odd_batch_error"] = str(error)

    if run_dir:
        # Token batches hold varying sentence counts, each a multiple of the device count:
        # the harder case for the split. Batches of 32 sentences are split in `sgd_steps`
        # above; a second end-to-end run with them added 20-25 s to this test.
        report["train_and_evaluate_tokens"] = train_end_to_end(
            run_dir, batch_by="tokens", batch_size=400)
    with open(out_path, "w") as f:
        json.dump(report, f, indent=2)


def train_end_to_end(run_dir, batch_by="sentences", batch_size=32):
    """`train_and_evaluate` with distribute="data-parallel": 2 epochs of 2 steps on the toy pair
    (4 steps each: 27.8 s against 20.5 s under JAX, alone on 2 cores).

    Validation and test are cut to 32 sentences (one batch each) to keep decoding cheap.
    """
    from keras_rnmt.models import ModelConfig
    from keras_rnmt.training import train
    from keras_rnmt.training.config import TrainConfig

    load_splits = train.load_splits
    train.load_splits = lambda config: {
        name: (sources[:32], targets[:32]) if name != "train" else (sources, targets)
        for name, (sources, targets) in load_splits(config).items()
    }
    config = TrainConfig(
        dataset="toy", toy_examples=512, min_frequency=1, distribute="data-parallel",
        model=ModelConfig(embedding_dim=16, encoder_units=16, decoder_units=32,
                          attention="dot", dropout=0.0),
        batch_by=batch_by, batch_size=batch_size, epochs=2, steps_per_epoch=2,
        learning_rate=1e-2, beam_size=1,
    )
    results = train.train_and_evaluate(config, run_dir)
    with open(os.path.join(run_dir, "log.csv")) as f:
        losses = [float(row["loss"]) for row in csv.DictReader(f)]
    return {"replicas": results["replicas"], "losses": losses,
            "test_bleu_finite": bool(np.isfinite(results["test_bleu"]))}


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
