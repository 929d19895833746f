"""Log-probabilities as scores minus a per-row shift (`keras_rnmt.search.shifted`).

The scripted Markov models of test_beam_search.py, each row's log-probabilities returned as
``ShiftedLogProbs(table[y] + offset[y], offset[y])`` with a different offset for every
previous token y: the hand-derived hypotheses and scores must come out unchanged. Were the
shift dropped or applied to the wrong beam, the offsets below reorder them (step 1 would
rank "a" continuations, offset +3, above "b c" .36, offset -2, and step 2 "c" ones, +7).
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import ShiftedLogProbs, beam_search, greedy_search
from keras_rnmt.search.shifted import as_shifted, normalized

from .fake_models import BOS, EOS, SCRIPT_ATTENTION, SCRIPT_TABLE, A, B, C, RandomModel, table_state
from .test_beam_search import LOG_01, LOG_0288, LOG_03

#                      pad  <s>  </s>   a     b    c
OFFSETS = np.array([0.0, 5.0, 0.0, 3.0, -2.0, 7.0], "float32")


def shifted_table_step(table, attention):
    def step_fn(tokens, state):
        shift = ops.take(OFFSETS, tokens, axis=0)
        scores = ops.take(table, tokens, axis=0) + shift[:, None]
        weights = ops.take(attention, tokens, axis=0)
        return ShiftedLogProbs(scores, shift), {"steps": state["steps"] + 1}, weights

    return step_fn


def test_beam_search_applies_each_beam_s_shift():
    result = beam_search(shifted_table_step(SCRIPT_TABLE, SCRIPT_ATTENTION), table_state(1),
                         batch_size=1, beam_size=3, bos_id=BOS, eos_id=EOS, n_best=3,
                         max_length=5)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(result.tokens)[0],
        [[A, EOS, 0, 0, 0], [B, C, EOS, 0, 0], [A, C, EOS, 0, 0]])
    np.testing.assert_allclose(ops.convert_to_numpy(result.scores)[0],
                               [LOG_03, LOG_0288, LOG_01], rtol=1e-5)
    np.testing.assert_allclose(ops.convert_to_numpy(result.log_probs)[0],
                               [LOG_03, LOG_0288, LOG_01], rtol=1e-5)


def test_greedy_search_shifts_the_chosen_word():
    # <s> -> a (.5) -> </s> (.6): log .3, whatever the rows' offsets.
    result = greedy_search(shifted_table_step(SCRIPT_TABLE, SCRIPT_ATTENTION), table_state(1),
                           batch_size=1, bos_id=BOS, eos_id=EOS, max_length=5)
    np.testing.assert_array_equal(ops.convert_to_numpy(result.tokens)[0], [A, EOS, 0, 0, 0])
    np.testing.assert_allclose(ops.convert_to_numpy(result.scores), [LOG_03], rtol=1e-5)


@pytest.mark.parametrize("beam_size", [1, 3])
def test_a_model_s_logits_and_logsumexp_search_as_its_log_softmax(beam_size):
    # A recurrent model with attention and random weights: the same hypotheses and scores
    # whether its step returns log_softmax(z) or (z, logsumexp(z)).
    model, twin = RandomModel(seed=4), RandomModel(seed=4)  # the same weights and states

    def shifted_step(tokens, state):
        logits, new_state, attention = twin.logits(tokens, state)
        return ShiftedLogProbs(logits, ops.logsumexp(logits, axis=-1)), new_state, attention

    common = dict(batch_size=3, bos_id=BOS, eos_id=EOS, max_length=6, n_best=beam_size)
    search = greedy_search if beam_size == 1 else beam_search
    if beam_size > 1:
        common.update(beam_size=beam_size, length_penalty=1.0)
    else:
        common.pop("n_best")
    plain = search(model.step, model.initial_state(3), **common)
    shifted = search(shifted_step, twin.initial_state(3), **common)
    np.testing.assert_array_equal(ops.convert_to_numpy(shifted.tokens),
                                  ops.convert_to_numpy(plain.tokens))
    np.testing.assert_allclose(ops.convert_to_numpy(shifted.scores),
                               ops.convert_to_numpy(plain.scores), rtol=1e-5, atol=1e-6)


def test_plain_log_probs_become_shift_zero_and_everything_float32():
    log_probs = ops.cast(np.log(np.array([[0.25, 0.75], [0.5, 0.5]], "float32")), "float16")
    shifted = as_shifted(log_probs)
    assert keras.backend.standardize_dtype(shifted.scores.dtype) == "float32"
    np.testing.assert_array_equal(ops.convert_to_numpy(shifted.shift), [0.0, 0.0])
    half = ShiftedLogProbs(ops.cast(np.ones((2, 3)), "float16"), ops.cast(np.ones(2), "float16"))
    again = as_shifted(half)
    assert keras.backend.standardize_dtype(again.shift.dtype) == "float32"
    np.testing.assert_array_equal(ops.convert_to_numpy(normalized(again)), np.zeros((2, 3)))
