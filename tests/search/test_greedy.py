"""Greedy search on scripted Markov "models" with hand-derived results."""

import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import greedy_search

from .fake_models import (
    BOS,
    CHAIN_ATTENTION,
    CHAIN_TABLE,
    EOS,
    SCRIPT_ATTENTION,
    SCRIPT_TABLE,
    A,
    B,
    table_state,
    table_step,
)


def to_numpy(x):
    return ops.convert_to_numpy(x)


def test_greedy_follows_the_most_probable_token():
    result = greedy_search(
        table_step(SCRIPT_TABLE, SCRIPT_ATTENTION),
        table_state(1),
        batch_size=1,
        bos_id=BOS,
        eos_id=EOS,
        max_length=5,
    )
    # <s> -> a (0.5) -> </s> (0.6): log 0.3.
    np.testing.assert_array_equal(to_numpy(result.tokens), [[A, EOS, 0, 0, 0]])
    np.testing.assert_allclose(to_numpy(result.scores), [-1.2039728], rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(result.log_probs), to_numpy(result.scores))
    np.testing.assert_array_equal(to_numpy(result.lengths), [2])
    expected_attention = np.zeros((1, 5, 3), "float32")
    expected_attention[0, :2] = SCRIPT_ATTENTION[[BOS, A]]
    np.testing.assert_array_equal(to_numpy(result.attention), expected_attention)


def test_per_sentence_limits_force_eos_and_finished_sentences_stay_frozen():
    # </s> is unlikely in this chain: <s> -> a (0.6) -> b (0.7) -> a (0.6) -> ...
    result = greedy_search(
        table_step(CHAIN_TABLE, CHAIN_ATTENTION),
        table_state(2),
        batch_size=2,
        bos_id=BOS,
        eos_id=EOS,
        max_length=np.array([2, 4], dtype="int32"),
    )
    # Sentence 0 gets </s> forced at step 1 (P(</s>|a) = 0.1) and then only padding while
    # sentence 1 runs on to its own limit.
    np.testing.assert_array_equal(to_numpy(result.tokens), [[A, EOS, 0, 0], [A, B, A, EOS]])
    np.testing.assert_array_equal(to_numpy(result.lengths), [2, 4])
    # log(0.6 * 0.1) and log(0.6 * 0.7 * 0.6 * 0.1)
    np.testing.assert_allclose(to_numpy(result.scores), [-2.8134107, -3.6809113], rtol=1e-6)
    attention = to_numpy(result.attention)
    np.testing.assert_array_equal(attention[0, :2], CHAIN_ATTENTION[[BOS, A]])
    np.testing.assert_array_equal(attention[0, 2:], np.zeros((2, 3)))
    np.testing.assert_array_equal(attention[1], CHAIN_ATTENTION[[BOS, A, B, A]])


def test_max_length_one_is_just_eos_and_no_attention_gives_none():
    result = greedy_search(
        table_step(CHAIN_TABLE),
        table_state(1),
        batch_size=1,
        bos_id=BOS,
        eos_id=EOS,
        max_length=1,
    )
    np.testing.assert_array_equal(to_numpy(result.tokens), [[EOS]])
    np.testing.assert_allclose(to_numpy(result.scores), [np.log(0.05)], rtol=1e-6)
    assert result.attention is None


def test_max_length_must_be_positive():
    with pytest.raises(ValueError, match="max_length must be >= 1; received max_length=0"):
        greedy_search(
            table_step(CHAIN_TABLE),
            table_state(1),
            batch_size=1,
            bos_id=BOS,
            eos_id=EOS,
            max_length=0,
        )
