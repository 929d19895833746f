"""The training unroll and the search step are the same math (issue: step equivalence)."""

import keras
import numpy as np
import pytest
from keras import ops
from model_helpers import VOCAB, reverse_copy_batch, small_model

from keras_rnmt.models.search_log_probs import search_log_probs

VARIANTS = [
    dict(attention="none"),
    dict(attention="bahdanau"),
    dict(attention="dot", attention_units=32),
    dict(attention="general"),
    dict(attention="concat"),
    dict(attention="local-m", window=2),
    dict(attention="local-p", window=2),
    dict(attention="recurrent", window=0),
    dict(attention="recurrent", window=2),
    dict(attention="coverage"),
    dict(attention="bahdanau", attention_order="bahdanau"),
    dict(attention="recurrent", input_feeding="context"),
    dict(attention="bahdanau", input_feeding="none", cell="gru", decoder_layers=2),
    dict(attention="general", encoder_type="self-attention", num_heads=2, intermediate_dim=32,
         transformer_layers=1),
]


def _unrolled_log_probs(model, source, target_in, constants=None):
    state = model.search_state(source)
    steps = []
    for j in range(target_in.shape[1]):
        log_probs, state, _ = model.search_step(ops.convert_to_tensor(target_in[:, j]), state,
                                                constants=constants)
        steps.append(ops.convert_to_numpy(log_probs))
    return np.stack(steps, axis=1)


@pytest.mark.parametrize("with_constants", [False, True], ids=["plain", "search-constants"])
@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: "-".join(map(str, v.values())))
def test_step_by_step_equals_training_unroll(variant, with_constants):
    source, target_in, _ = reverse_copy_batch(n=4, seed=1)
    model = small_model(**variant)
    logits = model((source, target_in), training=False)
    expected = ops.convert_to_numpy(search_log_probs(logits))
    constants = model.search_constants() if with_constants else None
    np.testing.assert_allclose(_unrolled_log_probs(model, source, target_in, constants),
                               expected, atol=1e-5)


def test_the_input_table_is_every_embedding_times_the_first_lstm_kernel_rows():
    model = small_model(attention="bahdanau", embedding_dim=16)
    model((np.ones((1, 3), "int32"), np.ones((1, 2), "int32")))
    decoder = model.decoder
    embeddings = ops.convert_to_numpy(decoder.embedding.embeddings)  # (V, 16)
    kernel = ops.convert_to_numpy(decoder.cell.cells[0].kernel)  # (16 + feed, 4 * 32)
    constants = model.search_constants()
    assert sorted(constants) == ["input_kernel", "input_table"]
    table = ops.convert_to_numpy(constants["input_table"])
    assert table.shape == (VOCAB, 4 * 32)
    np.testing.assert_allclose(table, embeddings @ kernel[:16], rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(ops.convert_to_numpy(constants["input_kernel"]), kernel[16:])
    assert [v.path for v in model.search_constant_variables()] == [
        decoder.embedding.embeddings.path, decoder.cell.cells[0].kernel.path]


def test_a_gru_decoder_has_no_search_constants():
    model = small_model(attention="bahdanau", cell="gru")
    model((np.ones((1, 3), "int32"), np.ones((1, 2), "int32")))
    assert model.search_constants() == {} and model.search_constant_variables() == []


def test_teacher_forced_attention_matches_search_weights():
    source, target_in, _ = reverse_copy_batch(n=3, seed=2)
    model = small_model(attention="recurrent", window=1)
    weights = ops.convert_to_numpy(model.attention_weights(source, target_in))
    state = model.search_state(source)
    for j in range(target_in.shape[1]):
        _, state, step_weights = model.search_step(ops.convert_to_tensor(target_in[:, j]), state)
        np.testing.assert_allclose(ops.convert_to_numpy(step_weights), weights[:, j], atol=1e-6)
    # Weights are a distribution over real source tokens and exactly 0 on pads.
    real = source != 0
    np.testing.assert_allclose(weights.sum(-1), 1.0, atol=1e-5)
    assert np.all(weights[np.broadcast_to(~real[:, None, :], weights.shape)] == 0.0)


def test_output_shape_and_dtype():
    source, target_in, _ = reverse_copy_batch(n=2)
    logits = small_model(attention="recurrent")((source, target_in))
    assert tuple(logits.shape) == (2, target_in.shape[1], 24)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"
