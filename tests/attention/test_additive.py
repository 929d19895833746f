"""`additive_energies`: the values and gradients of Yang et al. Eq. 5 / 11, and the
recomputation under JAX (`keras.remat`) that must change neither."""

import keras
import numpy as np
import pytest

from keras_rnmt.attention.additive import additive_energies

from .helpers import to_numpy

# B=2, S=3, units=2; hand-picked so every tanh is in its curved range.
KEYS = np.array([[[0.5, -0.2], [0.1, 0.3], [-0.4, 0.6]],
                 [[0.2, 0.2], [-0.3, -0.1], [0.7, -0.5]]], dtype="float32")
QUERY = np.array([[0.1, -0.3], [0.4, 0.2]], dtype="float32")  # U_a s_j, (B, units)
EXTRA = np.array([[[0.0, 0.1], [0.2, 0.0], [0.0, -0.2]],
                  [[0.1, 0.1], [0.0, 0.3], [-0.1, 0.0]]], dtype="float32")
V = np.array([[1.5], [-0.5]], dtype="float32")  # v_a, (units, 1)
COTANGENT = np.array([[1.0, -2.0, 0.5], [0.3, 1.0, -1.0]], dtype="float32")  # dL/de, (B, S)


def energy_layer():
    layer = keras.layers.Dense(1, use_bias=False)
    layer.build((None, 2))
    layer.set_weights([V])
    return layer


def numpy_gradients(extra):
    """e = tanh(K + q + X) @ v; dL/dK = dL/dX = (1 - tanh^2) * v^T * dL/de; dL/dq sums over S."""
    hidden = np.tanh(KEYS + QUERY[:, None, :] + (0.0 if extra is None else extra))
    energies = (hidden @ V)[..., 0]
    d_hidden = (1.0 - hidden**2) * V[:, 0] * COTANGENT[..., None]
    return energies, d_hidden, d_hidden.sum(axis=1)


def backend_gradients(extra, extra_projection=None):
    """(energies, dL/dkeys, dL/dquery[, dL/dextra]) with the backend's own autodiff, for
    L = sum(COTANGENT * energies)."""
    energy = energy_layer()
    inputs = [KEYS, QUERY] + ([] if extra is None else [extra])

    def loss(*tensors):
        energies = additive_energies(energy, tensors[0], tensors[1],
                                     tensors[2] if len(tensors) > 2 else None, extra_projection)
        return keras.ops.sum(energies * keras.ops.convert_to_tensor(COTANGENT)), energies

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        (_, energies), grads = jax.value_and_grad(loss, argnums=tuple(range(len(inputs))),
                                                  has_aux=True)(*inputs)
    elif backend == "tensorflow":
        import tensorflow as tf

        tensors = [tf.constant(x) for x in inputs]
        with tf.GradientTape() as tape:
            tape.watch(tensors)
            total, energies = loss(*tensors)
        grads = tape.gradient(total, tensors)
    else:
        import torch

        # On Keras' device (a GPU where there is one), beside the layers' weights.
        tensors = [keras.ops.convert_to_tensor(x).detach().requires_grad_(True) for x in inputs]
        total, energies = loss(*tensors)
        grads = torch.autograd.grad(total, tensors)
        energies = energies.detach()
    return [to_numpy(energies)] + [to_numpy(g) for g in grads]


@pytest.mark.parametrize("with_extra", [False, True], ids=["eq5", "eq11"])
def test_values_and_gradients_match_numpy(with_extra):
    extra = EXTRA if with_extra else None
    energies, d_keys, d_query = numpy_gradients(extra)
    got = backend_gradients(extra)
    np.testing.assert_allclose(got[0], energies, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[1], d_keys, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[2], d_query, rtol=1e-5, atol=1e-6)
    if with_extra:
        np.testing.assert_allclose(got[3], d_keys, rtol=1e-5, atol=1e-6)


def test_extra_projection_is_applied_inside():
    # extra_projection P: hidden = K + q + E P, so dL/dE = dL/dhidden P^T.
    projection = np.array([[0.5, -1.0], [2.0, 0.3]], dtype="float32")
    layer = keras.layers.Dense(2, use_bias=False)
    layer.build((None, None, 2))
    layer.set_weights([projection])
    energies, d_keys, _ = numpy_gradients(EXTRA @ projection)
    got = backend_gradients(EXTRA, extra_projection=layer)
    np.testing.assert_allclose(got[0], energies, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[3], d_keys @ projection.T, rtol=1e-5, atol=1e-6)


def test_literal_energy():
    # Row 0, word 0: tanh(0.5 + 0.1) * 1.5 - tanh(-0.2 - 0.3) * 0.5
    #   = 0.537050 * 1.5 + 0.462117 * 0.5 = 0.805574 + 0.231059 = 1.036633.
    energies = to_numpy(additive_energies(energy_layer(), KEYS, QUERY))
    np.testing.assert_allclose(energies[0, 0], 1.036633, rtol=1e-5)


@pytest.mark.backends("jax")
def test_jax_recomputes_the_tanh_in_the_backward_pass():
    import jax

    energy = energy_layer()
    jaxpr = jax.make_jaxpr(lambda k, q: additive_energies(energy, k, q))(KEYS, QUERY)
    # One equation: `jax.checkpoint`'s primitive ("remat2" in JAX 0.4-0.10, "checkpoint" in
    # its pretty-printed jaxprs), holding the add, tanh and `v_a` product.
    assert [eqn.primitive.name for eqn in jaxpr.jaxpr.eqns] in (["remat2"], ["checkpoint"])
