import numpy as np
import pytest

from keras_rnmt.attention import RecurrentAttention, attention_window

from .helpers import (
    CHECKS,
    MASK,
    MEMORY,
    QUERY,
    QUERY_2,
    U_A,
    V_A,
    W_A,
    build,
    make_variant,
    np_additive,
    np_context,
    np_lstm,
    np_masked_softmax,
    np_window,
    run_checks,
    run_steps,
    set_sublayer_weights,
    to_numpy,
)


def test_attention_window_literal():
    weights = np.array([[0.2, 0.3, 0.5]], dtype="float32")
    np.testing.assert_array_equal(
        to_numpy(attention_window(weights, 1)),
        np.array([[[0.0, 0.2, 0.3], [0.2, 0.3, 0.5], [0.3, 0.5, 0.0]]], dtype="float32"),
    )
    np.testing.assert_array_equal(
        to_numpy(attention_window(weights, 0)), np.array([[[0.2], [0.3], [0.5]]], dtype="float32")
    )

    for k in (0, 1, 2, 5):  # against a plain loop
        weights = np.random.default_rng(k).random((3, 7)).astype("float32")
        window = to_numpy(attention_window(weights, k))
        assert window.shape == (3, 7, 2 * k + 1)
        np.testing.assert_array_equal(window, np_window(weights, k))
    with pytest.raises(ValueError, match="k=-1"):
        attention_window(np.zeros((1, 3), "float32"), -1)


def test_state_shapes_and_the_window_fed_to_the_memory_lstm():
    layer = build(RecurrentAttention(units=2, window=1, memory_units=2))
    state = layer.initial_state(MEMORY, MASK)
    assert [tuple(t.shape) for t in state] == [(2, 3), (2, 3, 2), (2, 3, 2)]
    # First step: the previous attention is all zeros, so the LSTM input is all zeros.
    first_input = to_numpy(layer.memory_inputs(state))
    assert first_input.shape == (2, 3, 3) and np.all(first_input == 0.0)

    keys = layer.prepare(MEMORY, MASK)
    _, weights, state = layer(QUERY, MEMORY, keys, mask=MASK, state=state)
    assert [tuple(t.shape) for t in state] == [(2, 3), (2, 3, 2), (2, 3, 2)]
    # Next step: the LSTM input is exactly this step's weights, windowed, zeros at the edges
    # and on the pad.
    np.testing.assert_array_equal(to_numpy(state[0]), to_numpy(weights))
    np.testing.assert_array_equal(
        to_numpy(layer.memory_inputs(state)), np_window(to_numpy(weights), 1)
    )
    assert to_numpy(layer.memory_inputs(state))[1, 1, 2] == 0.0  # right neighbour is a pad


def reference(k, kernel, recurrent_kernel, bias, w_d, queries):
    """Yang et al. Eq. 10-13 step by step: window of the PREVIOUS weights -> LSTM -> score."""
    batch, src_len, _ = MEMORY.shape
    previous = np.zeros((batch, src_len))
    d_h = np.zeros((batch, src_len, w_d.shape[0]))
    d_c = np.zeros_like(d_h)
    outputs = []
    for query in queries:
        d_h, d_c = np_lstm(np_window(previous, k), d_h, d_c, kernel, recurrent_kernel, bias)  # (10)
        energies = np_additive(query, MEMORY, W_A, U_A, V_A, extra=d_h @ w_d)  # (11)
        weights = np_masked_softmax(energies, MASK)  # (12)
        outputs.append((np_context(weights, MEMORY), weights, d_h, d_c))  # (13)
        previous = weights
    return outputs


def test_golden_two_steps(subtests):
    for k in (0, 1):  # the paper's window 1 and window 3
        with subtests.test(k=k):
            golden_two_steps(k)


def golden_two_steps(k):
    rng = np.random.default_rng(7)
    kernel = rng.uniform(-1, 1, (2 * k + 1, 8)).astype("float32")
    recurrent_kernel = rng.uniform(-1, 1, (2, 8)).astype("float32")
    bias = rng.uniform(-1, 1, (8,)).astype("float32")
    w_d = np.array([[0.7, -0.4], [-0.2, 0.9]], dtype="float32")

    layer = build(RecurrentAttention(units=2, window=k, memory_units=2))
    set_sublayer_weights(
        layer,
        memory_projection=[W_A],
        query_projection=[U_A],
        energy=[V_A],
        memory_cell=[kernel, recurrent_kernel, bias],
        dynamic_memory_projection=[w_d],
    )
    queries = [QUERY, QUERY_2]
    contexts, weights, states = run_steps(layer, queries, MEMORY, MASK)
    expected = reference(k, kernel, recurrent_kernel, bias, w_d, queries)
    for step in range(2):
        context, alpha, d_h, d_c = expected[step]
        np.testing.assert_allclose(to_numpy(weights[step]), alpha, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(to_numpy(contexts[step]), context, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(states[step][1]), d_h, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(states[step][2]), d_c, rtol=1e-5, atol=1e-6)
    # The memory matters: at step 2 it differs across words and changes the weights.
    no_memory = np_masked_softmax(np_additive(QUERY_2, MEMORY, W_A, U_A, V_A), MASK)
    assert not np.allclose(expected[1][1], no_memory, atol=1e-4)


def test_literal_two_steps():
    # k=0, only the LSTM candidate weights on the input are 1 (all biases 0, so every gate is
    # sigmoid(0) = 1/2), W_h = U_a = 0, so every real word gets the same energy. Both memory
    # units follow the same numbers.
    # Step 1: input 0 -> c = 0, d = 0 -> equal energies -> alpha1 = 1/3 (row 2: 1/2, pad 0).
    # Step 2: c = tanh(alpha1) / 2, d = tanh(c) / 2:
    #   row 1: tanh(tanh(1/3) / 2) / 2 = tanh(0.160756) / 2 = 0.079693
    #   row 2: tanh(tanh(1/2) / 2) / 2 = tanh(0.231059) / 2 = 0.113516, pad: 0.
    layer = build(RecurrentAttention(units=2, window=0, memory_units=2))
    candidate = [[0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]]  # gates i, i, f, f, c, c, o, o
    set_sublayer_weights(
        layer,
        memory_projection=[np.zeros((2, 2))],
        query_projection=[np.zeros((2, 2))],
        energy=[np.ones((2, 1))],
        memory_cell=[candidate, np.zeros((2, 8)), np.zeros(8)],
        dynamic_memory_projection=[np.eye(2)],
    )
    _, weights, states = run_steps(layer, QUERY, MEMORY, MASK, steps=2)
    np.testing.assert_allclose(to_numpy(weights[0]), [[1 / 3] * 3, [0.5, 0.5, 0.0]], atol=1e-6)
    assert np.all(to_numpy(states[0][1]) == 0.0)
    expected = np.array([[0.079693] * 3, [0.113516, 0.113516, 0.0]])[..., None]
    np.testing.assert_allclose(to_numpy(states[1][1]), np.repeat(expected, 2, -1), atol=1e-6)


def test_default_memory_units_and_argument_errors():
    assert RecurrentAttention(units=10).memory_units == 5
    assert RecurrentAttention(units=1).memory_units == 1
    with pytest.raises(ValueError, match="window=-1"):
        RecurrentAttention(units=4, window=-1)
    with pytest.raises(ValueError, match="memory_units=0"):
        RecurrentAttention(units=4, memory_units=0)


def test_layer_checks(subtests, tmp_path):
    make_window_0 = lambda: RecurrentAttention(units=8, window=0, memory_units=4)  # noqa: E731
    run_checks(subtests, CHECKS, make_window_0, tmp_path, variant="window=0")
    make_window_1 = lambda: make_variant("recurrent")  # noqa: E731 (window=1)
    run_checks(subtests, CHECKS + ("training_step",), make_window_1, tmp_path, variant="window=1")
