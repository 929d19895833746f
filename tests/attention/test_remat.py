"""Under JAX the attention step's per-word parts are recomputed in the backward pass
(`keras_rnmt.attention.remat.recomputed_under_jax`): the gradients through the decoder's
`scan` must be those without the recomputation."""

import keras
import numpy as np
import pytest

from keras_rnmt.attention import additive, recurrent

from .helpers import AttentionUnroll, make_variant, unroll_inputs

pytestmark = pytest.mark.backends("jax")  # elsewhere the function runs as is


def scan_gradients(name, steps=4):
    """Gradients of sum(contexts * R) w.r.t. the queries, the memory and every weight, over
    `steps` steps of `keras_rnmt.loop.scan` (the decoder's loop)."""
    import jax

    inputs = unroll_inputs(seed=5, steps=steps)
    keras.utils.set_random_seed(0)  # the same weights in every call
    model = AttentionUnroll(make_variant(name))
    model.build({key: value.shape for key, value in inputs.items()})
    weights = [np.asarray(v) for v in model.trainable_variables]
    fixed = [np.asarray(v) for v in model.non_trainable_variables]
    readout = np.random.default_rng(1).normal(
        size=(inputs["queries"].shape[0], steps, inputs["memory"].shape[2])).astype("float32")

    def loss(weights, queries, memory):
        outputs, _ = model.stateless_call(
            weights, fixed, {"queries": queries, "memory": memory, "mask": inputs["mask"]})
        return (outputs["context"] * readout).sum()

    grad = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))
    return jax.tree_util.tree_leaves(grad(weights, inputs["queries"], inputs["memory"]))


@pytest.mark.parametrize("name", ["bahdanau", "recurrent", "coverage", "concat"])
def test_recomputation_changes_no_gradient(name, monkeypatch):
    recomputed = scan_gradients(name)
    monkeypatch.setattr(additive, "recomputed_under_jax", lambda fn: fn)
    monkeypatch.setattr(recurrent, "recomputed_under_jax", lambda fn: fn)
    stored = scan_gradients(name)
    assert len(recomputed) == len(stored) > 2
    for got, expected in zip(recomputed, stored):
        assert np.abs(np.asarray(expected)).max() > 0
        np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-6)
