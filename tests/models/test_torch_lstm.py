"""`fused_lstm`: the encoder's masked LSTM as one `torch._VF.lstm` call under PyTorch gives
the Keras layer's outputs, final states and weight gradients; elsewhere it stands aside."""

import keras
import numpy as np
import pytest

from keras_rnmt.models import rnn_encoder
from keras_rnmt.models.rnn_encoder import RNNEncoder
from keras_rnmt.models.torch_lstm import fused_lstm

LENGTHS = [7, 3, 1, 6, 7, 2]  # ragged, unsorted, one full row and a one-word row


def ragged_ids(vocabulary=40, lengths=LENGTHS, width=7):
    ids = np.random.default_rng(0).integers(1, vocabulary, (len(lengths), width))
    for row, length in enumerate(lengths):
        ids[row, length:] = 0
    return ids


def built_layer(bidirectional=True, units=5, features=4):
    keras.utils.set_random_seed(3)
    layer = keras.layers.LSTM(units, return_sequences=True, return_state=True)
    if bidirectional:
        layer = keras.layers.Bidirectional(layer)
    layer.build((None, None, features))
    rng = np.random.default_rng(1)
    for weight in layer.trainable_weights:  # large enough that every gate matters
        weight.assign(rng.normal(size=weight.shape).astype("float32") * 0.5)
    return layer


def inputs(features=4):
    ids = ragged_ids()
    x = np.random.default_rng(2).normal(size=(*ids.shape, features)).astype("float32")
    return x, ids != 0


@pytest.mark.backends("torch")
@pytest.mark.parametrize("bidirectional", [True, False], ids=["bi", "forward"])
def test_outputs_states_and_gradients_match_the_keras_layer(bidirectional):
    import torch

    layer = built_layer(bidirectional)
    x, mask = inputs()
    readout = [torch.linspace(0.1, 1.0, n) for n in (10 if bidirectional else 5, 5)]

    def outputs_and_gradients(run):
        for weight in layer.trainable_weights:
            weight.value.grad = None
        outputs = run()
        loss = sum((o * readout[0 if o.ndim == 3 else 1]).sum() for o in outputs)
        loss.backward()
        return ([keras.ops.convert_to_numpy(o) for o in outputs],
                [weight.value.grad.numpy().copy() for weight in layer.trainable_weights])

    x, mask = keras.ops.convert_to_tensor(x), keras.ops.convert_to_tensor(mask)
    expected, expected_grads = outputs_and_gradients(lambda: layer(x, mask=mask))
    got, got_grads = outputs_and_gradients(lambda: fused_lstm(layer, x, mask))
    assert len(got) == len(expected) == (5 if bidirectional else 3)
    for name, a, b in zip(["sequences", "h", "c", "h_backward", "c_backward"], got, expected):
        assert a.shape == b.shape, name
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)
    # Padded steps: zeros in a Bidirectional layer; a lone LSTM repeats its last real output.
    padded = got[0][~keras.ops.convert_to_numpy(mask)]
    assert not padded.any() if bidirectional else padded.all()
    for name, a, b in zip([w.path for w in layer.trainable_weights], got_grads, expected_grads):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.backends("torch")
@pytest.mark.parametrize("bidirectional", [True, False], ids=["bi", "forward"])
def test_the_encoder_gives_the_keras_layers_results(monkeypatch, bidirectional):
    keras.utils.set_random_seed(0)
    encoder = RNNEncoder(vocabulary_size=40, embedding_dim=4, units=5, num_layers=2,
                         bidirectional=bidirectional)
    ids = ragged_ids()
    fused = [keras.ops.convert_to_numpy(t) for t in encoder(ids)]
    calls = []

    def keras_path(*args, **kwargs):
        calls.append(1)
        return None

    monkeypatch.setattr(rnn_encoder, "fused_lstm", keras_path)
    plain = [keras.ops.convert_to_numpy(t) for t in encoder(ids)]
    assert len(calls) == 2  # one per layer
    for name, a, b in zip(["memory", "mask", "final"], fused, plain):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, err_msg=name)


@pytest.mark.backends("torch")
def test_a_mixed_policy_runs_fused_in_its_compute_dtype():
    keras.utils.set_random_seed(0)
    encoder = RNNEncoder(vocabulary_size=40, embedding_dim=4, units=5,
                         dtype=keras.DTypePolicy("mixed_bfloat16"))
    memory, _, final = encoder(ragged_ids())
    assert keras.backend.standardize_dtype(memory.dtype) == "bfloat16"
    assert keras.backend.standardize_dtype(final.dtype) == "bfloat16"


@pytest.mark.backends("torch")
@pytest.mark.parametrize("case", ["hole", "empty_row", "gru", "recurrent_dropout", "sum"])
def test_it_stands_aside_where_it_would_differ(case):
    x, mask = inputs()
    layer = built_layer()
    if case == "hole":  # a mask that is not right-padded
        mask = mask.copy()
        mask[0, 2] = False
    elif case == "empty_row":  # pack_padded_sequence takes no empty sequence
        mask = mask.copy()
        mask[1] = False
    elif case == "gru":
        layer = keras.layers.Bidirectional(keras.layers.GRU(5, return_sequences=True,
                                                            return_state=True))
    elif case == "recurrent_dropout":
        layer = keras.layers.LSTM(5, return_sequences=True, return_state=True,
                                  recurrent_dropout=0.1)
    else:
        layer = keras.layers.Bidirectional(keras.layers.LSTM(5, return_sequences=True,
                                                             return_state=True),
                                           merge_mode="sum")
    layer.build((None, None, 4))
    assert fused_lstm(layer, keras.ops.convert_to_tensor(x),
                      keras.ops.convert_to_tensor(mask)) is None


def test_other_backends_run_the_keras_layer():
    x, mask = inputs()
    layer = built_layer()
    result = fused_lstm(layer, x, mask)
    assert (result is None) == (keras.backend.backend() != "torch")
