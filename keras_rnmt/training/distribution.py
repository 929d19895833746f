"""Data-parallel training over every local device, on each backend's own engine.

    with distribution_scope("data-parallel", batch_size=64) as replicas:
        model = build_model(config)        # variables are created replicated
        model.compile(...)
        model.fit(train, ...)              # each batch is split over `replicas.devices`

- JAX: `keras.distribution.DataParallel` over `keras.distribution.list_devices()`, made the
  global distribution for the duration of the block (it must be set before the model's
  variables exist; `fit` reads it to shard every batch along its first axis).
- TensorFlow: `tf.distribute.MirroredStrategy` over the local GPUs, or over the logical
  CPUs when there is no GPU; the model is built and compiled inside `strategy.scope()`.
- PyTorch: not supported (Keras has no distribution engine for it); an error says so.

Every global batch is split evenly, so a `batch_size` in sentences must be a multiple of the
device count (the training driver fills each length bucket's last batch up to a multiple of
it with all-<pad>-target rows: `make_dataset(batch_multiple=...)`; token batches hold a
multiple of it too).
Under TensorFlow the loss is averaged per replica and then over replicas, so it equals the
single-device loss exactly when every replica holds the same number of real target tokens
and closely otherwise; under JAX the program is one SPMD computation over the global batch.

To try it on a CPU-only machine, split the CPU into virtual devices before the backend
starts: `XLA_FLAGS=--xla_force_host_platform_device_count=2` for JAX, or
`tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)`
for TensorFlow.
"""

import contextlib
import functools
from dataclasses import dataclass

import keras

DISTRIBUTIONS = ("none", "data-parallel")


@dataclass(frozen=True)
class Replicas:
    """What a `distribution_scope` trains on.

    Attributes:
        mode: "none" or "data-parallel".
        devices: tuple of str, the devices a batch is split over (empty for "none").
        engine: the backend object doing the work: the `keras.distribution.DataParallel`
            (JAX), the `tf.distribute.MirroredStrategy` (TensorFlow), or None.
    """

    mode: str
    devices: tuple = ()
    engine: object = None

    @property
    def num_replicas(self):
        return max(1, len(self.devices))


@contextlib.contextmanager
def distribution_scope(distribute="none", batch_size=None):
    """Build, compile and fit a model inside this block to train it as `distribute` says.

    Args:
        distribute: str. "none" (the backend's default device) or "data-parallel" (every
            local device, one model replica each).
        batch_size: int or None. Sentences per global batch; with "data-parallel" it must
            be a multiple of the device count. None skips the check (token-based batches).

    Yields:
        A `Replicas` describing the devices used.
    """
    if distribute not in DISTRIBUTIONS:
        raise ValueError(f"Unknown distribute {distribute!r}. Valid choices: "
                         f"{', '.join(repr(d) for d in DISTRIBUTIONS)}")
    if distribute == "none":
        yield Replicas("none")
        return
    backend = keras.backend.backend()
    if backend == "jax":
        engine = keras.distribution.DataParallel(devices=keras.distribution.list_devices())
        devices = tuple(str(d) for d in engine.device_mesh.devices.flat)
    elif backend == "tensorflow":
        engine = _mirrored_strategy(tuple(_tensorflow_devices()))
        devices = tuple(engine.extended.worker_devices)
    else:
        raise ValueError(
            f"distribute='data-parallel' is not supported under the {backend!r} backend: "
            "Keras has no distribution engine for it. Use KERAS_BACKEND=jax "
            "(keras.distribution.DataParallel) or KERAS_BACKEND=tensorflow "
            "(tf.distribute.MirroredStrategy), or distribute='none'."
        )
    if batch_size is not None and batch_size % len(devices):
        raise ValueError(
            f"Data-parallel training splits every batch evenly over {len(devices)} devices, "
            f"so `batch_size` must be a multiple of {len(devices)}. "
            f"Received: batch_size={batch_size}"
        )
    print(f"data-parallel over {len(devices)} device(s): {', '.join(devices)}")
    # Both engines' scope(): JAX's makes the distribution global, TensorFlow's creates
    # variables mirrored on every device.
    with engine.scope():
        yield Replicas(distribute, devices, engine)


@functools.cache
def _mirrored_strategy(devices):
    # One strategy per device set and process: a second MirroredStrategy numbers its
    # collective ops from the same start as the first, and the two runs' all-reduces then
    # collide ("Shape mismatch in the collective instance").
    import tensorflow as tf

    return tf.distribute.MirroredStrategy(devices=list(devices))


def _tensorflow_devices():
    import tensorflow as tf

    devices = tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("CPU")
    return [device.name for device in devices]

