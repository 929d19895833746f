import numpy as np
import pytest

from keras_rnmt.attention import CoverageAttention

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
    np_masked_softmax,
    run_checks,
    run_steps,
    set_sublayer_weights,
    sigmoid,
    to_numpy,
)

SCORE_WEIGHTS = {"memory_projection": [W_A], "query_projection": [U_A], "energy": [V_A]}


def zero_score(layer, coverage_units):
    """Score weights that make every energy 0, so the weights are uniform over real tokens."""
    set_sublayer_weights(
        layer,
        memory_projection=[np.zeros((2, 2))],
        query_projection=[np.zeros((2, 2))],
        energy=[np.zeros((2, 1))],
        coverage_projection=[np.zeros((coverage_units, 2))],
    )


def assert_steps(layer, expected, queries):
    contexts, weights, states = run_steps(layer, queries, MEMORY, MASK)
    for step, (context, alpha, coverage) in enumerate(expected):
        np.testing.assert_allclose(to_numpy(weights[step]), alpha, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(to_numpy(contexts[step]), context, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(to_numpy(states[step][0]), coverage, rtol=1e-5, atol=1e-6)


def golden_linguistic():
    u_f = np.array([[0.8], [-1.5]], dtype="float32")
    v_cov = np.array([[-2.0, 1.0]], dtype="float32")  # V_a: 1 x units
    layer = build(CoverageAttention(units=2, coverage="linguistic", max_fertility=3.0))
    set_sublayer_weights(layer, fertility=[u_f], coverage_projection=[v_cov], **SCORE_WEIGHTS)

    fertility = 3.0 * sigmoid(MEMORY @ u_f)  # Phi_i = N sigmoid(U_f h_i), (B, S, 1)
    coverage = np.zeros((2, 3, 1))
    expected = []
    for query in (QUERY, QUERY_2):
        energies = np_additive(query, MEMORY, W_A, U_A, V_A, extra=coverage @ v_cov)
        weights = np_masked_softmax(energies, MASK)
        coverage = coverage + weights[..., None] / fertility
        expected.append((np_context(weights, MEMORY), weights, coverage))
    assert_steps(layer, expected, [QUERY, QUERY_2])
    np.testing.assert_allclose(to_numpy(layer.prepare(MEMORY)[1]), fertility[..., 0], rtol=1e-6)


def golden_neural():
    rng = np.random.default_rng(11)
    size = 2
    w_h, b = rng.uniform(-1, 1, (2, 3 * size)), rng.uniform(-1, 1, (3 * size,))
    w_alpha, w_s = rng.uniform(-1, 1, (1, 3 * size)), rng.uniform(-1, 1, (2, 3 * size))
    u_rec = rng.uniform(-1, 1, (size, 3 * size))
    v_cov = rng.uniform(-1, 1, (size, 2))
    layer = build(CoverageAttention(units=2, coverage="neural", coverage_units=size))
    set_sublayer_weights(
        layer,
        coverage_memory_input=[w_h, b],
        coverage_weight_input=[w_alpha],
        coverage_query_input=[w_s],
        coverage_recurrent=[u_rec],
        coverage_projection=[v_cov],
        **SCORE_WEIGHTS,
    )
    coverage = np.zeros((2, 3, size))
    expected = []
    for query in (QUERY, QUERY_2):
        energies = np_additive(query, MEMORY, W_A, U_A, V_A, extra=coverage @ v_cov)
        weights = np_masked_softmax(energies, MASK)
        x = MEMORY @ w_h + b + weights[..., None] @ w_alpha + (query @ w_s)[:, None, :]
        u = coverage @ u_rec
        z = sigmoid(x[..., :size] + u[..., :size])
        r = sigmoid(x[..., size : 2 * size] + u[..., size : 2 * size])
        n = np.tanh(x[..., 2 * size :] + r * u[..., 2 * size :])
        coverage = z * coverage + (1 - z) * n
        expected.append((np_context(weights, MEMORY), weights, coverage))
    assert_steps(layer, expected, [QUERY, QUERY_2])


def literal_linguistic():
    # U_f = 0: Phi = 2 * sigmoid(0) = 1; zero score -> uniform weights, so after two steps
    # the coverage is 2 * 1/3 = 0.666667 (row 1) and 2 * 1/2 = 1 on real words, 0 on the pad.
    layer = build(CoverageAttention(units=2, coverage="linguistic"))
    zero_score(layer, 1)
    set_sublayer_weights(layer, fertility=[np.zeros((2, 1))])
    _, _, states = run_steps(layer, QUERY, MEMORY, MASK, steps=2)
    np.testing.assert_allclose(
        to_numpy(states[1][0])[..., 0], [[0.666667] * 3, [1.0, 1.0, 0.0]], atol=1e-6
    )


def literal_neural():
    # Only the candidate biases are 1: z = sigmoid(0) = 1/2, n = tanh(1) = 0.761594;
    # C1 = 0.761594 / 2 = 0.380797; C2 = 0.380797 / 2 + 0.761594 / 2 = 0.571196 (both units).
    layer = build(CoverageAttention(units=2, coverage="neural", coverage_units=2))
    zero_score(layer, 2)
    set_sublayer_weights(
        layer,
        coverage_memory_input=[np.zeros((2, 6)), [0.0, 0.0, 0.0, 0.0, 1.0, 1.0]],
        coverage_weight_input=[np.zeros((1, 6))],
        coverage_query_input=[np.zeros((2, 6))],
        coverage_recurrent=[np.zeros((2, 6))],
    )
    _, _, states = run_steps(layer, QUERY, MEMORY, MASK, steps=2)
    np.testing.assert_allclose(to_numpy(states[0][0]), np.full((2, 3, 2), 0.380797), atol=1e-6)
    np.testing.assert_allclose(to_numpy(states[1][0]), np.full((2, 3, 2), 0.571196), atol=1e-6)


def test_argument_errors_and_defaults():
    with pytest.raises(ValueError, match=r"'neural', 'linguistic'.*coverage='fertility'"):
        CoverageAttention(units=4, coverage="fertility")
    with pytest.raises(ValueError, match="coverage_units=3"):
        CoverageAttention(units=4, coverage="linguistic", coverage_units=3)
    with pytest.raises(ValueError, match="max_fertility=0"):
        CoverageAttention(units=4, max_fertility=0)
    assert CoverageAttention(units=4, coverage="linguistic").coverage_units == 1
    assert CoverageAttention(units=4).coverage_units == 10


def test_layer_checks(subtests, tmp_path):
    checks = CHECKS + ("training_step",)
    run_checks(subtests, checks, lambda: make_variant("coverage"), tmp_path, variant="neural")
    make_linguistic = lambda: CoverageAttention(units=8, coverage="linguistic")  # noqa: E731
    run_checks(subtests, checks, make_linguistic, tmp_path, variant="linguistic")


def test_golden_two_steps(subtests):
    for case in (
        golden_linguistic,
        golden_neural,
    ):
        with subtests.test(case.__name__):
            case()


def test_literal_values(subtests):
    for case in (
        literal_linguistic,
        literal_neural,
    ):
        with subtests.test(case.__name__):
            case()
