"""`calls_directly`: eager PyTorch skips Keras' call wrapper only where it changes nothing,
and a model trained through the direct calls gets the wrapper's losses and gradients."""

import keras
import numpy as np
import pytest

from keras_rnmt import direct_call
from keras_rnmt.attention.base import MatrixDense
from keras_rnmt.models import ModelConfig, build_model


def built_dense(dtype=None):
    layer = MatrixDense(3, dtype=dtype)
    layer.build((None, 4))
    return layer


def test_only_eager_torch_tensors_of_a_built_float32_layer_qualify():
    x = keras.ops.ones((2, 4))
    torch_backend = keras.backend.backend() == "torch"
    assert direct_call.calls_directly(built_dense(), x) == torch_backend
    # Not built; a symbolic input; a mixed policy; an input in another dtype.
    assert not direct_call.calls_directly(MatrixDense(3), x)
    assert not direct_call.calls_directly(built_dense(), keras.KerasTensor((2, 4)))
    assert not direct_call.calls_directly(built_dense("mixed_bfloat16"),
                                          keras.ops.cast(x, "bfloat16"))
    assert not direct_call.calls_directly(built_dense(), keras.ops.cast(x, "float16"))


def test_a_functional_model_is_still_built_through_the_wrapper():
    inputs = keras.Input((5, 4))
    outputs = built_dense()(inputs)
    assert isinstance(outputs, keras.KerasTensor) and tuple(outputs.shape) == (None, 5, 3)


# The modules whose step calls go through `calls_directly`.
MODULES = ("keras_rnmt.attention.base", "keras_rnmt.attention.recurrent",
           "keras_rnmt.models.decoder_cell", "keras_rnmt.models.attention_decoder")


def tiny_model(attention):
    keras.utils.set_random_seed(0)
    config = ModelConfig(source_vocab_size=20, target_vocab_size=20, embedding_dim=4,
                         encoder_units=4, decoder_units=6, attention=attention,
                         attention_units=5, memory_units=3, window=1, dropout=0.0)
    model = build_model(config)
    source = np.array([[5, 6, 7, 2, 0], [8, 9, 2, 0, 0]])
    target_in = np.array([[1, 5, 6, 7], [1, 8, 9, 0]])
    target_out = np.array([[5, 6, 7, 2], [8, 9, 2, 0]])
    model((source, target_in))
    return model, (source, target_in), target_out


@pytest.mark.backends("torch")
@pytest.mark.parametrize("attention", ["bahdanau", "recurrent", "coverage", "local-p"])
def test_losses_and_gradients_match_the_wrapped_calls(monkeypatch, attention):
    import torch

    model, inputs, targets = tiny_model(attention)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def loss_and_gradients():
        for weight in model.trainable_weights:
            weight.value.grad = None
        logits = model(inputs, training=True)
        loss = loss_fn(targets, logits)
        loss.backward()
        return float(loss.detach()), [weight.value.grad.clone() for weight in model.trainable_weights
                             if weight.value.grad is not None]

    calls = []
    real = direct_call.calls_directly

    def counted(layer, inputs):
        result = real(layer, inputs)
        calls.append(result)
        return result

    for module in MODULES:
        monkeypatch.setattr(f"{module}.calls_directly", counted)
    direct_loss, direct_grads = loss_and_gradients()
    assert calls and all(calls)  # the step took the direct calls
    for module in MODULES:
        monkeypatch.setattr(f"{module}.calls_directly", lambda layer, inputs: False)
    wrapped_loss, wrapped_grads = loss_and_gradients()
    assert direct_loss == pytest.approx(wrapped_loss, rel=1e-6)
    assert len(direct_grads) == len(wrapped_grads)
    for a, b in zip(direct_grads, wrapped_grads):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7)


@pytest.mark.backends("torch")
@pytest.mark.parametrize("attention", ["bahdanau", "recurrent"])
def test_search_steps_match_the_wrapped_calls(monkeypatch, attention):
    model, (source, _), _ = tiny_model(attention)
    tokens = keras.ops.convert_to_tensor(np.array([1, 1]))

    def three_steps():
        state, steps = model.search_state(source), []
        for _ in range(3):
            log_probs, state, weights = model.search_step(tokens, state)
            steps.append((keras.ops.convert_to_numpy(log_probs),
                          keras.ops.convert_to_numpy(weights)))
        return steps

    direct = three_steps()
    for module in MODULES:
        monkeypatch.setattr(f"{module}.calls_directly", lambda layer, inputs: False)
    for (a, b), (c, d) in zip(direct, three_steps()):
        np.testing.assert_allclose(a, c, rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(b, d, rtol=1e-6, atol=1e-7)
