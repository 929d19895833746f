"""Under JAX the training unroll takes the LSTM's and W_c's weight gradients once after the
loop (`keras_rnmt.models.deferred_scan`): every gradient must be the one plain autodiff of
the loop gives, and no backward loop may carry a kernel-sized accumulator."""

import keras
import numpy as np
import pytest
from model_helpers import DEFERRED_VARIANTS, built_model_and_batch

from keras_rnmt.loop import scan
from keras_rnmt.matmul_precision import matmul_precision_scope
from keras_rnmt.models import attention_decoder
from keras_rnmt.models.deferred_scan import deferred_scan

pytestmark = pytest.mark.backends("jax")  # the other backends run the plain loop

VARIANTS = DEFERRED_VARIANTS


def plain_scan(step, variables, kernels, context, init, xs):
    return scan(lambda carry, x: step(context, carry, x), init, xs)


def model_and_loss(variant):
    model, (source, target_in, target_out) = built_model_and_batch(**variant)
    weights = [np.asarray(v) for v in model.trainable_variables]
    fixed = [np.asarray(v) for v in model.non_trainable_variables]
    mask = (target_out != 0).astype("float32")

    def loss(weights):
        import jax

        logits, _ = model.stateless_call(weights, fixed, (source, target_in), training=True)
        log_probs = jax.nn.log_softmax(logits, axis=-1)
        nll = -jax.numpy.take_along_axis(log_probs, target_out[..., None], axis=-1)[..., 0]
        return (nll * mask).sum() / mask.sum()

    return model, weights, loss


def gradients(variant):
    import jax

    model, weights, loss = model_and_loss(variant)
    grads = jax.jit(jax.grad(loss))(weights)
    return model, [np.asarray(g) for g in grads]


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
def test_deferred_gradients_are_those_of_the_plain_loop(variant, monkeypatch):
    calls = []
    monkeypatch.setattr(attention_decoder, "deferred_scan",
                        lambda *a: calls.append(1) or deferred_scan(*a))
    model, deferred = gradients(variant)
    assert calls, "the training unroll did not use deferred_scan"
    monkeypatch.setattr(attention_decoder, "deferred_scan", plain_scan)
    _, plain = gradients(variant)
    deferred_names = {id(k) for k in model.decoder.cell.deferred_kernels()}
    checked = 0
    for variable, got, expected in zip(model.trainable_variables, deferred, plain):
        assert np.abs(expected).max() > 0, variable.path
        np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6, err_msg=variable.path)
        checked += id(variable) in deferred_names
    assert checked == len(deferred_names) >= 1


def kernel_sized_loop_carries(variant, monkeypatch, deferred):
    """Shapes of the LSTM kernels that some `scan` in the gradient's jaxpr carries."""
    import jax
    from jax.extend.core import subjaxprs

    if not deferred:
        monkeypatch.setattr(attention_decoder, "deferred_scan", plain_scan)
    model, weights, loss = model_and_loss(variant)
    cell = model.decoder.cell.cells[0]
    shapes = {tuple(cell.kernel.shape), tuple(cell.recurrent_kernel.shape)}
    found = set()

    def visit(jaxpr):
        for eqn in jaxpr.eqns:
            if eqn.primitive.name == "scan":
                n = eqn.params["num_consts"]
                carries = eqn.invars[n:n + eqn.params["num_carry"]]
                found.update(tuple(v.aval.shape) for v in carries if tuple(v.aval.shape) in shapes)
        for sub in subjaxprs(jaxpr):
            visit(sub)

    visit(jax.make_jaxpr(jax.grad(loss))(weights).jaxpr)
    return found


def test_no_backward_loop_accumulates_a_kernel_gradient(monkeypatch):
    variant = dict(attention="bahdanau", decoder_units=40)  # kernel shapes unlike the others'
    assert not kernel_sized_loop_carries(variant, monkeypatch, deferred=True)
    assert kernel_sized_loop_carries(variant, monkeypatch, deferred=False)  # the plain loop does


def test_mixed_precision_gradients_match_the_plain_loop(monkeypatch):
    keras.mixed_precision.set_dtype_policy("mixed_bfloat16")
    try:
        _, deferred = gradients(dict(attention="bahdanau"))
        monkeypatch.setattr(attention_decoder, "deferred_scan", plain_scan)
        _, plain = gradients(dict(attention="bahdanau"))
    finally:
        keras.mixed_precision.set_dtype_policy("float32")
    for got, expected in zip(deferred, plain):
        assert got.dtype == expected.dtype == np.float32
        scale = np.linalg.norm(expected)
        assert np.linalg.norm(got - expected) <= 2e-2 * scale + 1e-6


# The rounding is the deferred products' own, the same for every kernel the loop defers (the
# float32 test above covers every variant's deferral): the Bahdanau and recurrent decoders.
@pytest.mark.parametrize("variant", [VARIANTS[0], VARIANTS[3]],
                         ids=lambda v: "-".join(map(str, v.values())))
def test_bfloat16_matmul_gradients_match_the_plain_loop_and_differ_from_float32(
        variant, monkeypatch):
    float32 = gradients(variant)[1]
    with matmul_precision_scope("bfloat16"):
        model, deferred = gradients(variant)
        monkeypatch.setattr(attention_decoder, "deferred_scan", plain_scan)
        _, plain = gradients(variant)
    for variable, got, expected in zip(model.trainable_variables, deferred, plain):
        assert got.dtype == expected.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-6, err_msg=variable.path)
    # The rounded operands show: bfloat16 has an 8-bit significand.
    error = max(np.abs(g - e).max() / np.abs(e).max() for g, e in zip(deferred, float32))
    assert 1e-4 < error < 5e-2


def test_a_kernel_outside_the_step_variables_is_an_error():
    layer = keras.layers.Dense(3)
    layer.build((2, 4))
    other = keras.layers.Dense(3)
    other.build((2, 4))
    with pytest.raises(ValueError, match="not among the step's variables"):
        deferred_scan(lambda c, carry, x, matmul: (carry, x), layer.variables, [other.kernel],
                      (), np.zeros((2, 3), "float32"), np.zeros((5, 2, 4), "float32"))


def test_a_deferred_kernel_the_step_does_not_multiply_is_an_error():
    layer = keras.layers.Dense(3)
    layer.build((2, 4))
    with pytest.raises(ValueError, match="not multiplied in the step"):
        deferred_scan(lambda c, carry, x, matmul: (carry, x), layer.variables, [layer.kernel],
                      (), np.zeros((2, 3), "float32"), np.zeros((5, 2, 4), "float32"))
