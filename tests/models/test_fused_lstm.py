"""`fused_lstm` and `RNNEncoder` against Keras' own LSTM and Bidirectional layers."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.models.fused_lstm import fused_lstm, lstm_update
from keras_rnmt.models.rnn_encoder import RNNEncoder


def to_numpy(x):
    return ops.convert_to_numpy(x)


def padded_ids(seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, 50, (4, 7)).astype("int32")
    ids[0, 5:] = 0
    ids[1, 1:] = 0  # a one-token source
    ids[3, 3:] = 0
    return ids


def test_lstm_update_golden_values():
    """One unit, z = [i, f, g, o] = [0, ln 3, atanh .5, 0], c = 2.

    c' = σ(ln 3)·2 + σ(0)·tanh(atanh .5) = .75·2 + .5·.5 = 1.75; h = σ(0)·tanh(1.75).
    """
    z = np.array([[0.0, np.log(3.0), np.arctanh(0.5), 0.0]], "float32")
    h, c = lstm_update(ops.convert_to_tensor(z), ops.convert_to_tensor([[2.0]]))
    np.testing.assert_allclose(to_numpy(c), [[1.75]], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(h), [[0.5 * np.tanh(1.75)]], rtol=1e-6)


@pytest.mark.parametrize("bidirectional", [True, False])
def test_encoder_matches_keras_layers(bidirectional):
    """Same variables, same numbers as calling Keras' (Bidirectional) LSTM with the mask:
    the fused path (TensorFlow, PyTorch) and the encoder's output (any backend)."""
    keras.utils.set_random_seed(1)
    encoder = RNNEncoder(50, 8, 6, num_layers=2, bidirectional=bidirectional)
    ids = padded_ids()
    memory, mask, final = encoder(ids)
    keep = ops.not_equal(ids, 0)
    x = fused = encoder.embedding(ids)
    for rnn in encoder.rnns:
        outputs = rnn(x, mask=keep)
        fused_outputs = encoder._fused(rnn, fused, keep)
        x, fused = outputs[0], fused_outputs[0]
    real = np.asarray(to_numpy(keep))[..., None]
    expected_final = to_numpy(ops.concatenate(outputs[1:][::2], axis=-1))
    for states, got in ((fused_outputs, fused), ((memory, None, final), memory)):
        np.testing.assert_allclose(to_numpy(got) * real, to_numpy(x) * real, atol=1e-6)
        got_final = states[2] if got is memory else ops.concatenate(states[1:][::2], -1)
        np.testing.assert_allclose(to_numpy(got_final), expected_final, atol=1e-6)
        # Padding positions are zeros (Keras' Bidirectional zeroes them too).
        if bidirectional or got is fused:
            assert np.all(to_numpy(got) * (1 - real) == 0)
    assert len(encoder.weights) == 1 + 2 * 3 * (2 if bidirectional else 1)


def test_backward_direction_starts_at_the_last_real_token():
    """A one-token row: the backward output is one LSTM step from zeros on that token."""
    keras.utils.set_random_seed(2)
    forward, backward = keras.layers.LSTMCell(3), keras.layers.LSTMCell(3)
    x = np.random.default_rng(0).normal(size=(1, 4, 5)).astype("float32")
    mask = np.array([[True, False, False, False]])
    forward.build((1, 5))
    backward.build((1, 5))
    outputs, finals = fused_lstm(ops.convert_to_tensor(x), ops.convert_to_tensor(mask),
                                 [forward, backward])
    zeros = [ops.zeros((1, 3)), ops.zeros((1, 3))]
    step_f, _ = forward(ops.convert_to_tensor(x[:, 0]), zeros)
    step_b, _ = backward(ops.convert_to_tensor(x[:, 0]), zeros)
    np.testing.assert_allclose(to_numpy(outputs)[:, 0], to_numpy(ops.concatenate(
        [step_f, step_b], axis=-1)), atol=1e-6)
    np.testing.assert_allclose(to_numpy(finals[0][0]), to_numpy(step_f), atol=1e-6)
    np.testing.assert_allclose(to_numpy(finals[1][0]), to_numpy(step_b), atol=1e-6)
    assert np.all(to_numpy(outputs)[:, 1:] == 0)


def test_encoder_gradients_match_keras_layers():
    """The fused loop trains the same variables to the same gradients."""
    keras.utils.set_random_seed(3)
    encoder = RNNEncoder(50, 8, 6, num_layers=1)
    ids = padded_ids(1)
    encoder(ids)
    keep = ops.not_equal(ids, 0)

    def fused_loss():
        outputs = encoder._fused(encoder.rnns[0], encoder.embedding(ids), keep)
        return ops.sum(outputs[0] ** 2) + ops.sum(ops.concatenate(outputs[1::2], -1) ** 2)

    def keras_loss():
        outputs = encoder.rnns[0](encoder.embedding(ids), mask=keep)
        memory = outputs[0] * ops.cast(keep, "float32")[..., None]
        return ops.sum(memory ** 2) + ops.sum(ops.concatenate(outputs[1::2], -1) ** 2)

    variables = encoder.rnns[0].trainable_variables
    for got, want in zip(gradients(fused_loss, variables), gradients(keras_loss, variables)):
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-6)


def gradients(loss_fn, variables):
    """d loss / d variables as numpy arrays, under the current backend."""
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        with tf.GradientTape() as tape:
            loss = loss_fn()
        return [g.numpy() for g in tape.gradient(loss, variables)]
    if backend == "jax":
        import jax

        def stateless(values):
            with keras.StatelessScope(state_mapping=list(zip(variables, values))):
                return loss_fn()

        return [np.asarray(g) for g in jax.grad(stateless)([v.value for v in variables])]
    loss = loss_fn()
    loss.backward()
    grads = [v.value.grad.detach().cpu().numpy().copy() for v in variables]
    for v in variables:
        v.value.grad = None
    return grads
