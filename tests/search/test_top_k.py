"""`beam_top_k` is `top_k` over the flat (beam, word) pairs: values, indices and ties."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.search.top_k import beam_top_k, chunk_width

NEG_INF = float("-inf")
# TensorFlow's and JAX's top_k put the lower index first among equal values; torch.topk's
# order among ties is unspecified (and so is beam_top_k's there).
STABLE_TIES = keras.backend.backend() in ("tensorflow", "jax")


def reference(alive, log_probs, k):
    scores = ops.convert_to_tensor(alive)[:, :, None] + ops.convert_to_tensor(log_probs)
    scores = ops.reshape(scores, (alive.shape[0], -1))
    values, index = ops.top_k(scores, k=k, sorted=True)
    return ops.convert_to_numpy(values), ops.convert_to_numpy(index)


def test_chunk_width_picks_a_divisor_near_the_square_root():
    assert chunk_width(7859) in (29, 271)  # 7859 = 29 · 271, sqrt 88.6
    assert chunk_width(8000) in (80, 100)  # sqrt 89.4
    assert chunk_width(7919) is None  # a prime: no chunks, the plain top-k
    assert chunk_width(6) is None  # too small to chunk


@pytest.mark.parametrize("vocab_size", [7859, 120, 7919])
def test_equals_a_full_top_k(vocab_size):
    rng = np.random.default_rng(vocab_size)
    batch, beams, k = 6, 4, 8
    log_probs = np.log(rng.dirichlet(np.full(vocab_size, 0.3), size=(batch, beams)))
    log_probs = log_probs.astype("float32")
    alive = -rng.random((batch, beams)).astype("float32") * 3
    alive[1, 1:] = NEG_INF  # the first step: only beam 0 alive
    alive[2] = NEG_INF  # a sentence that is done: every pair is -inf
    alive[3, 2] = NEG_INF
    values, index = beam_top_k(ops.convert_to_tensor(alive), ops.convert_to_tensor(log_probs), k)
    expected_values, expected_index = reference(alive, log_probs, k)
    values, index = ops.convert_to_numpy(values), ops.convert_to_numpy(index)
    np.testing.assert_array_equal(values, expected_values)
    # The finite scores are distinct: their indices must agree on every backend.
    finite = np.isfinite(expected_values)
    np.testing.assert_array_equal(index[finite], expected_index[finite])
    if STABLE_TIES:  # the -inf ties of the finished sentence too
        np.testing.assert_array_equal(index, expected_index)


def test_ties_break_by_flat_index_like_top_k():
    # Every word of every beam has the same score: top_k takes the lowest flat indices,
    # and equal maxima in many chunks must not change that.
    batch, beams, vocab_size, k = 2, 3, 120, 6
    log_probs = np.full((batch, beams, vocab_size), -2.0, "float32")
    log_probs[1, 2, 100:] = -1.0  # sentence 1: a tied block at the end of beam 2
    alive = np.zeros((batch, beams), "float32")
    values, index = beam_top_k(ops.convert_to_tensor(alive), ops.convert_to_tensor(log_probs), k)
    values, index = ops.convert_to_numpy(values), ops.convert_to_numpy(index)
    np.testing.assert_array_equal(values, [[-2.0] * 6, [-1.0] * 6])
    # Whatever the order, k distinct pairs that hold those scores.
    for row in range(batch):
        assert len(set(index[row])) == k
        np.testing.assert_array_equal(log_probs[row].reshape(-1)[index[row]], values[row])
    if STABLE_TIES:
        np.testing.assert_array_equal(index, [[0, 1, 2, 3, 4, 5], [340, 341, 342, 343, 344, 345]])
