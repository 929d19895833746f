"""`keras_rnmt.models.dropout.Dropout`: inverted dropout, seeded, under every backend."""

import keras
import numpy as np

from keras_rnmt.models.dropout import Dropout


def _values(layer, x, training=True):
    return keras.ops.convert_to_numpy(layer(x, training=training))


def test_each_value_is_dropped_or_scaled_by_one_over_the_keep_rate():
    x = np.random.default_rng(0).uniform(1.0, 2.0, (64, 14, 128)).astype("float32")
    y = _values(Dropout(0.25, seed=3), x)
    dropped = y == 0.0
    np.testing.assert_allclose(y[~dropped], x[~dropped] / 0.75, rtol=1e-6)
    assert abs(dropped.mean() - 0.25) < 0.01  # 114,688 draws: sd 0.0013


def test_inference_and_rate_zero_are_the_identity():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    np.testing.assert_array_equal(_values(Dropout(0.5, seed=1), x, training=False), x)
    np.testing.assert_array_equal(_values(Dropout(0.0, seed=1), x), x)


def test_the_same_seed_gives_the_same_masks_and_the_next_call_new_ones():
    x = np.ones((8, 50), "float32")
    first, second = Dropout(0.5, seed=7), Dropout(0.5, seed=7)
    a, b = _values(first, x), _values(second, x)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(_values(first, x), a)


def test_noise_shape_shares_a_mask_along_an_axis():
    x = np.ones((4, 6, 5), "float32")
    y = _values(Dropout(0.5, noise_shape=(4, 1, 5), seed=2), x)
    np.testing.assert_array_equal(y, np.broadcast_to(y[:, :1, :], y.shape))


def test_gradient_is_the_mask_over_the_keep_rate():
    # y = x · m / (1 − rate) with x all ones: ∂Σy/∂x = m / (1 − rate) = y.
    layer = Dropout(0.5, seed=5)
    x = np.ones((6, 40), "float32")
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = layer(x, training=True)
            total = tf.reduce_sum(y)
        grad = tape.gradient(total, x)
    elif backend == "jax":
        import jax

        state = [v.value for v in layer.non_trainable_variables]
        y = layer.stateless_call([], state, x, training=True)[0]
        grad = jax.grad(lambda v: layer.stateless_call([], state, v, training=True)[0].sum())(x)
    else:
        import torch

        x = torch.tensor(x, requires_grad=True)
        y = layer(x, training=True)
        y.sum().backward()
        grad = x.grad
    y = keras.ops.convert_to_numpy(y)
    assert 0 < (y == 0).sum() < y.size
    np.testing.assert_array_equal(keras.ops.convert_to_numpy(grad), y)


def test_config_round_trip():
    layer = Dropout(0.3, seed=4, name="drop")
    again = Dropout.from_config(layer.get_config())
    assert (again.rate, again.seed, again.name) == (0.3, 4, "drop")
    assert isinstance(keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(layer)),
                      Dropout)
