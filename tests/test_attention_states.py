"""`TranslationModel.attention_states`, `Translator.attention_states` and `memory_norms`:
the recurrent attention's state per decoding step, read under teacher forcing."""

import numpy as np
import pytest
from keras import ops
from run_helpers import SOURCES, tiny_parts

from keras_rnmt.attention import memory_norms
from keras_rnmt.translator import Translator

SOURCE = np.array([[5, 6, 7, 3, 0, 0], [4, 3, 0, 0, 0, 0]], "int32")  # two lengths, padded
TARGET_IN = np.array([[2, 5, 6, 7], [2, 4, 0, 0]], "int32")


@pytest.fixture(scope="module")
def recurrent_parts():
    return tiny_parts(attention="recurrent", window=1, memory_units=4)


def test_states_per_step_match_the_training_unroll(recurrent_parts):
    model = recurrent_parts[0]
    weights, memory_h, memory_c = (ops.convert_to_numpy(s)
                                   for s in model.attention_states(SOURCE, TARGET_IN))
    assert weights.shape == (2, 4, 6) and memory_h.shape == memory_c.shape == (2, 4, 6, 4)
    # The state's weights of step j are the α_j of the teacher-forced training unroll.
    unrolled = ops.convert_to_numpy(model.attention_weights(SOURCE, TARGET_IN))
    np.testing.assert_allclose(weights, unrolled, atol=1e-5)
    # Step 0: the LSTM saw an all-zero window from a zero state, so every word's memory,
    # pads included, is the same vector.
    np.testing.assert_allclose(memory_h[:, 0], np.broadcast_to(memory_h[0, 0, 0], (2, 6, 4)),
                               atol=1e-6)
    assert not np.allclose(memory_h[0, 1, 0], memory_h[0, 1, 1])  # step 1: windows differ


def test_memory_norms_are_the_l2_norms_of_d(recurrent_parts):
    states = recurrent_parts[0].attention_states(SOURCE, TARGET_IN)
    norms = ops.convert_to_numpy(memory_norms(states))
    assert norms.shape == (2, 4, 6) and (norms >= 0).all()
    np.testing.assert_allclose(
        norms, np.linalg.norm(ops.convert_to_numpy(states[1]), axis=-1), rtol=1e-5)
    literal = (np.zeros(3), np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0]]), np.zeros(3))
    np.testing.assert_allclose(ops.convert_to_numpy(memory_norms(literal)), [5.0, 0.0])


def test_stateless_attention_has_no_states():
    model = tiny_parts(attention="bahdanau")[0]
    assert model.attention_states(SOURCE, TARGET_IN) == ()


@pytest.mark.parametrize("beam_size", [1, 3])
def test_translator_replays_the_search(recurrent_parts, beam_size):
    translator = Translator(*recurrent_parts, beam_size=beam_size, max_length_b=4)
    result = translator.translate([SOURCES[0]])[0]
    weights, memory_h, _ = translator.attention_states(SOURCES[0], result)
    assert weights.shape == (len(result.ids), len(result.source_tokens))
    assert memory_h.shape == (len(result.ids), len(result.source_tokens), 4)
    # Replaying the search's own output gives back the weights the search recorded.
    np.testing.assert_allclose(weights, result.attention, atol=1e-5)
