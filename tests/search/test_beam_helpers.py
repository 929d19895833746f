"""The pure beam helpers: beam-axis reshapes, beam gathers and the GNMT penalties."""

import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import (
    add_beam_dim,
    coverage_penalty,
    flatten_beam_dim,
    gather_beams,
    length_penalty,
    take_beams,
    unflatten_beam_dim,
)


def to_numpy(x):
    return ops.convert_to_numpy(x)


def test_add_flatten_unflatten_round_trip():
    x = np.arange(6, dtype="float32").reshape(2, 3)  # B=2 sentences, feature 3
    tiled = add_beam_dim(x, 4)
    assert tuple(tiled.shape) == (2, 4, 3)
    np.testing.assert_array_equal(to_numpy(tiled)[1], np.stack([x[1]] * 4))
    flat = flatten_beam_dim(tiled)
    # Row b * K + k is beam k of sentence b.
    np.testing.assert_array_equal(to_numpy(flat), np.repeat(x, 4, axis=0))
    np.testing.assert_array_equal(to_numpy(unflatten_beam_dim(flat, 2, 4)), to_numpy(tiled))


def test_gather_beams_reorders_a_nested_state():
    batch, beam = 2, 3
    # Leaf value 10 * b + k identifies sentence b, beam k in every leaf.
    ids = np.array([0, 1, 2, 10, 11, 12], dtype="float32")
    state = {
        "rnn": (ids[:, None] * np.ones((1, 2), "float32"), ids.astype("int32")),
        "memory": [ids[:, None, None] * np.ones((1, 4, 2), "float32")],
    }
    indices = np.array([[2, 0, 0], [1, 2, 0]], dtype="int32")
    gathered = gather_beams(state, indices, batch, beam)
    expected = np.array([2, 0, 0, 11, 12, 10], dtype="float32")
    h, counts = gathered["rnn"]
    np.testing.assert_array_equal(to_numpy(h), np.stack([expected, expected], axis=1))
    np.testing.assert_array_equal(to_numpy(counts), expected.astype("int32"))
    (memory,) = gathered["memory"]
    assert tuple(memory.shape) == (6, 4, 2)
    np.testing.assert_array_equal(to_numpy(memory)[:, 3, 1], expected)


def test_gather_beams_can_change_the_number_of_beams():
    ids = np.array([0, 1, 10, 11], dtype="float32")
    gathered = gather_beams((ids,), np.array([[1, 1, 0], [0, 1, 1]]), 2, 2)
    np.testing.assert_array_equal(to_numpy(gathered[0]), [1, 1, 0, 10, 11, 11])


def test_take_beams_on_beam_major_tensors():
    x = np.array([[[0, 0], [1, 1]], [[10, 10], [11, 11]]], dtype="int32")  # B=2, K=2, T=2
    taken = take_beams(x, np.array([[1, 1, 0, 1], [0, 0, 0, 1]]))
    assert tuple(taken.shape) == (2, 4, 2)
    np.testing.assert_array_equal(to_numpy(taken)[:, :, 0], [[1, 1, 0, 1], [10, 10, 10, 11]])


def test_length_penalty_is_gnmt():
    lengths = np.array([1, 2, 7], dtype="int32")
    np.testing.assert_allclose(to_numpy(length_penalty(lengths, 1.0)), [1.0, 7 / 6, 2.0])
    # ((5 + 7) / 6) ** 0.6 = 2 ** 0.6
    np.testing.assert_allclose(to_numpy(length_penalty(lengths, 0.6))[2], 1.5157166, rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(length_penalty(lengths, 0.0)), [1.0, 1.0, 1.0])


def test_coverage_penalty_excludes_padding_and_caps_at_one():
    # Two sentences, 2 hypotheses each, 3 source positions; the last one of sentence 0 is pad.
    sums = np.array(
        [
            [[1.5, 0.25, 0.7], [0.5, 0.5, 0.0]],
            [[1.0, 2.0, 0.1], [0.0, 1.0, 1.0]],
        ],
        dtype="float32",
    )
    mask = np.array([[True, True, False], [True, True, True]])
    penalty = to_numpy(coverage_penalty(sums, 0.2, source_mask=mask))
    expected = [
        [0.2 * np.log(0.25), 0.2 * (np.log(0.5) + np.log(0.5))],  # pad column ignored
        [0.2 * np.log(0.1), 0.2 * np.log(1e-6)],  # never-attended word: log(1e-6)
    ]
    np.testing.assert_allclose(penalty, expected, rtol=1e-5)
    # Without a mask every column counts: 0.2 * (log 0.25 + log 0.7) for the first.
    unmasked = to_numpy(coverage_penalty(sums, 0.2))
    np.testing.assert_allclose(unmasked[0, 0], 0.2 * (np.log(0.25) + np.log(0.7)), rtol=1e-5)
    np.testing.assert_array_equal(to_numpy(coverage_penalty(sums, 0.0)), np.zeros((2, 2)))


def test_gather_beams_keeps_the_leaves_a_step_passed_through():
    # `previous` is the state the step was given: a leaf returned as the same object is a
    # per-sentence constant (its K rows are equal) and is not reordered; a new leaf is.
    ids = ops.convert_to_tensor(np.array([0, 1, 10, 11], dtype="float32"))
    memory = ops.convert_to_tensor(np.array([5, 5, 7, 7], dtype="float32"))
    before = {"h": ids, "memory": memory}
    after = {"h": ids + 100.0, "memory": memory}
    gathered = gather_beams(after, np.array([[1, 1], [0, 0]]), 2, 2, previous=before)
    assert gathered["memory"] is memory
    np.testing.assert_array_equal(to_numpy(gathered["h"]), [101, 101, 110, 110])
    # Without `previous` every leaf is gathered, with the same values for a constant leaf.
    plain = gather_beams(after, np.array([[1, 1], [0, 0]]), 2, 2)
    np.testing.assert_array_equal(to_numpy(plain["memory"]), to_numpy(memory))


def test_gather_beams_with_previous_keeps_the_number_of_beams():
    ids = np.array([0, 1, 10, 11], dtype="float32")
    with pytest.raises(ValueError, match="keeps 2 beams"):
        gather_beams((ids,), np.array([[1, 1, 0], [0, 1, 1]]), 2, 2, previous=(ids,))
