"""`keras_rnmt.log_softmax`: z − logsumexp(z), golden values, large logits, its gradient."""

import math

import keras
import numpy as np
from keras import ops

from keras_rnmt.log_softmax import log_softmax


def test_golden_values():
    # log softmax([0, ln 2, ln 3]) = [ln 1/6, ln 2/6, ln 3/6].
    logits = np.array([[0.0, math.log(2.0), math.log(3.0)]], "float32")
    np.testing.assert_allclose(ops.convert_to_numpy(log_softmax(logits)),
                               np.log([[1 / 6, 2 / 6, 3 / 6]]), rtol=1e-6)


def test_large_logits_do_not_overflow():
    # exp(1000) overflows float32; logsumexp subtracts the maximum first. z - logsumexp(z)
    # is exact to about one float32 ulp of the largest logit (6.1e-5 at 1,000), the
    # rounding a logit of that size already carries.
    values = ops.convert_to_numpy(log_softmax(np.array([[1000.0, 1000.0, -1e9]], "float32")))
    ulp = float(np.spacing(np.float32(1000.0)))
    np.testing.assert_allclose(values[0, :2], [-math.log(2.0)] * 2, rtol=0, atol=ulp)
    assert values[0, 2] < -1e8 and np.isfinite(values).all()


def test_matches_keras_log_softmax_along_any_axis():
    logits = np.random.default_rng(0).normal(scale=5.0, size=(3, 4, 7)).astype("float32")
    for axis in (-1, 1):
        np.testing.assert_allclose(ops.convert_to_numpy(log_softmax(logits, axis=axis)),
                                   ops.convert_to_numpy(ops.log_softmax(logits, axis=axis)),
                                   atol=2e-6)


def gradient(fn, x):
    """d fn(x) / dx with the backend's own autodiff (fn returns a scalar)."""
    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return np.asarray(jax.grad(fn)(x))
    if backend == "tensorflow":
        import tensorflow as tf

        x = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            value = fn(x)
        return tape.gradient(value, x).numpy()
    import torch

    x = torch.tensor(x, requires_grad=True)
    return torch.autograd.grad(fn(x), x)[0].numpy()


def test_gradient_is_one_hot_minus_softmax():
    logits = np.array([0.5, -1.0, 2.0, 0.0], "float32")
    grad = gradient(lambda z: log_softmax(z)[2], logits)
    softmax = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(grad, np.eye(4)[2] - softmax, rtol=1e-5, atol=1e-6)
