"""Under PyTorch the training unroll takes the LSTM's and W_c's weight gradients once after
the loop (`keras_rnmt.models.torch_deferred_scan`): every gradient must be the one eager
autograd of the plain loop gives, and a step that misuses a kernel is an error."""

import keras
import numpy as np
import pytest
from model_helpers import DEFERRED_VARIANTS, built_model_and_batch

from keras_rnmt.loop import scan
from keras_rnmt.models import attention_decoder
from keras_rnmt.models import torch_deferred_scan as module
from keras_rnmt.models.lstm_step import plain_matmul
from keras_rnmt.models.torch_deferred_scan import defers_under_torch, torch_deferred_scan

VARIANTS = DEFERRED_VARIANTS + [
    dict(attention="local-p"),
    dict(attention="bahdanau", dropout=0.3),
]


def plain_scan(step, kernels, context, init, xs):
    return scan(lambda carry, x: step(context, carry, x), init, xs)


def gradients(variant):
    """The loss and every trainable variable's gradient of one teacher-forced batch."""
    import torch

    model, (source, target_in, target_out) = built_model_and_batch(**variant)
    keras.utils.set_random_seed(1)  # the same dropout masks in both runs
    logits = model((source, target_in), training=True)
    targets = torch.as_tensor(target_out, dtype=torch.long, device=logits.device)
    mask = (targets != 0).float()
    nll = torch.nn.functional.cross_entropy(logits.transpose(1, 2), targets, reduction="none")
    loss = (nll * mask).sum() / mask.sum()
    loss.backward()
    return model, float(loss.detach()), [v.value.grad for v in model.trainable_variables]


@pytest.mark.backends("torch")
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
def test_deferred_gradients_are_those_of_the_plain_loop(variant, monkeypatch):
    calls = []
    monkeypatch.setattr(attention_decoder, "torch_deferred_scan",
                        lambda *a: calls.append(1) or torch_deferred_scan(*a))
    model, deferred_loss, deferred = gradients(variant)
    assert calls, "the training unroll did not use torch_deferred_scan"
    monkeypatch.setattr(attention_decoder, "torch_deferred_scan", plain_scan)
    _, plain_loss, plain = gradients(variant)
    assert deferred_loss == pytest.approx(plain_loss, rel=1e-6)
    kernels = {id(k) for k in model.decoder.cell.deferred_kernels()}
    checked = 0
    for variable, got, expected in zip(model.trainable_variables, deferred, plain):
        assert got is not None and expected is not None, variable.path
        assert float(expected.abs().max()) > 0, variable.path
        np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=2e-5, atol=1e-6,
                                   err_msg=variable.path)
        checked += id(variable) in kernels
    assert checked == len(kernels) >= 1


@pytest.mark.backends("torch")
def test_bfloat16_products_give_the_plain_loop_s_gradients_to_bfloat16_rounding(monkeypatch):
    from keras_rnmt.matmul_precision import matmul_precision_scope

    variant = dict(attention="bahdanau", decoder_units=48)
    with matmul_precision_scope("bfloat16"):
        _, deferred_loss, deferred = gradients(variant)
        monkeypatch.setattr(attention_decoder, "torch_deferred_scan", plain_scan)
        _, plain_loss, plain = gradients(variant)
    _, float32_loss, _ = gradients(variant)
    assert deferred_loss == pytest.approx(plain_loss, rel=1e-5)
    assert deferred_loss != float32_loss  # the products were rounded
    for got, expected in zip(deferred, plain):
        scale = float(expected.norm())
        assert float((got - expected).norm()) <= 2e-2 * scale + 1e-6


@pytest.mark.backends("torch")
def test_each_kernel_gradient_is_one_product_after_the_loop():
    """The kernels' gradients come from one `Gradients.backward`, not from every step."""
    import torch

    product, gradients_function = module._functions()
    backward_calls = []
    real = gradients_function.backward

    def counted(ctx, grad):
        grads = real(ctx, grad)
        backward_calls.append([None if g is None else tuple(g.shape) for g in grads[1:]])
        return grads

    gradients_function.backward = staticmethod(counted)
    try:
        model, _, _ = gradients(dict(attention="bahdanau"))
    finally:
        gradients_function.backward = staticmethod(real)
    shapes = [tuple(k.shape) for k in model.decoder.cell.deferred_kernels()]
    assert backward_calls == [shapes]
    assert issubclass(product, torch.autograd.Function)


def toy_step(uses):
    """h_t = tanh(x_t W + h_{t-1} U), with `uses` the kernels multiplied each step."""
    def step(context, h, x, matmul=plain_matmul):
        total = sum(matmul(x if kernel.shape[0] == 3 else h, kernel) for kernel in uses)
        h = keras.ops.tanh(total)
        return h, h

    return step


@pytest.mark.backends("torch")
def test_a_toy_loop_gets_autograds_gradients():
    import torch

    rng = np.random.default_rng(0)
    w = keras.Variable(rng.standard_normal((3, 4)).astype("float32"), name="w")
    u = keras.Variable(rng.standard_normal((4, 4)).astype("float32"), name="u")
    xs = torch.tensor(rng.standard_normal((5, 2, 3)).astype("float32"), requires_grad=True)
    h0 = torch.zeros(2, 4)
    results = []
    for run in (torch_deferred_scan, plain_scan):
        for variable in (w, u):
            variable.value.grad = None
        xs.grad = None
        last, hs = run(toy_step([w, u]), [w, u], None, h0, xs)
        ((hs ** 2).sum() + last.sum()).backward()
        results.append([w.value.grad.clone(), u.value.grad.clone(), xs.grad.clone()])
    for got, expected in zip(*results):
        torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.backends("torch")
def test_a_kernel_used_twice_or_not_at_all_is_an_error():
    import torch

    w = keras.Variable(np.ones((3, 4), "float32"), name="w")
    u = keras.Variable(np.ones((4, 4), "float32"), name="u")
    xs, h0 = torch.ones(2, 2, 3), torch.zeros(2, 4)
    with pytest.raises(ValueError, match="multiplied twice"):
        torch_deferred_scan(toy_step([w, u, u]), [w, u], None, h0, xs)
    with pytest.raises(ValueError, match=r"\['u'\] were not multiplied in the step"):
        torch_deferred_scan(toy_step([w]), [w, u], None, h0, xs)


def test_only_float32_torch_training_defers():
    w = keras.Variable(np.ones((3, 4), "float32"))
    x = keras.ops.ones((2, 3))
    torch_backend = keras.backend.backend() == "torch"
    assert defers_under_torch([w], x) == torch_backend
    assert not defers_under_torch([w], keras.ops.cast(x, "bfloat16"))
    if torch_backend:
        import torch

        with torch.no_grad():
            assert not defers_under_torch([w], x)
