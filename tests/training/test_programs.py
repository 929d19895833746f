"""`release_compiled_programs`: compiled programs freed, and with them their memory mappings."""

import keras
import numpy as np
import pytest

from keras_rnmt.training.programs import memory_mappings, release_compiled_programs


def test_memory_mappings_counts_this_process_maps():
    with open("/proc/self/maps") as f:
        expected = sum(1 for _ in f)
    # Opening the file can itself map a page or two.
    assert memory_mappings() == pytest.approx(expected, abs=8)


def test_release_is_harmless_to_a_model_that_goes_on_predicting():
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    x = np.arange(6, dtype="float32").reshape(2, 3)
    before = model.predict(x, verbose=0)
    assert release_compiled_programs() > 0
    np.testing.assert_allclose(model.predict(x, verbose=0), before, rtol=1e-6)


@pytest.mark.backends("jax")
def test_under_jax_the_programs_of_every_shape_are_unmapped():
    import jax
    import jax.numpy as jnp

    @jax.jit
    def step(x, w):
        for i in range(6):
            x = jnp.tanh(x @ w) * jax.nn.sigmoid(x + i)
        return jnp.sum(jax.nn.log_softmax(x, axis=-1))

    grad = jax.jit(jax.grad(step))
    w = jnp.full((16, 16), 0.01)
    release_compiled_programs()
    start = memory_mappings()
    for rows in range(1, 11):  # one program per batch shape, as a bucketed epoch compiles
        grad(jnp.ones((rows, 16)), w).block_until_ready()
    compiled = memory_mappings()
    # XLA's CPU backend maps each compiled kernel separately: many mappings per program.
    assert compiled - start > 10 * 20
    released = release_compiled_programs()
    assert released - start < (compiled - start) // 10
    # Released programs compile again when called.
    assert np.isfinite(float(grad(jnp.ones((3, 16)), w)[0, 0]))
