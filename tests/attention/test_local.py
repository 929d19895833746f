import numpy as np
import pytest

from keras_rnmt.attention import LocalAttention

from .helpers import (
    CHECKS,
    LITERAL_MEMORY,
    LITERAL_QUERY,
    MASK,
    MEMORY,
    QUERY,
    QUERY_2,
    U_A,
    V_A,
    W_A,
    build,
    make_variant,
    np_context,
    padded_batch,
    run_checks,
    run_steps,
    set_sublayer_weights,
    sigmoid,
    to_numpy,
)


def np_local(energies, mask, position, window):
    """Luong local alignment: softmax inside |i - p| <= D over real tokens, times a Gaussian
    with sigma = D / 2, not renormalised; loops over rows and positions."""
    out = np.zeros_like(energies, dtype="float64")
    sigma = window / 2.0
    for b in range(energies.shape[0]):
        inside = [
            i for i in range(energies.shape[1]) if mask[b, i] and abs(i - position[b]) <= window
        ]
        if not inside:
            continue
        exps = np.exp(energies[b, inside] - energies[b, inside].max())
        for i, e in zip(inside, exps / exps.sum()):
            out[b, i] = e * np.exp(-((i - position[b]) ** 2) / (2 * sigma**2))
    return out


def general_energies(query):
    return np.einsum("bd,bsd->bs", query, MEMORY @ W_A)


def golden_local_m_three_steps_with_clamping():
    layer = build(LocalAttention(mode="monotonic", window=1, score="general"))
    set_sublayer_weights(layer, memory_projection=[W_A])
    queries = [QUERY, QUERY_2, QUERY]
    contexts, weights, _ = run_steps(layer, queries, MEMORY, MASK)
    lengths = MASK.sum(axis=1)
    for step, query in enumerate(queries):
        position = np.minimum(step, lengths - 1)  # row 2 (S=2) stays on its last word at step 2
        expected = np_local(general_energies(query), MASK, position, window=1)
        np.testing.assert_allclose(to_numpy(weights[step]), expected, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(
            to_numpy(contexts[step]), np_context(expected, MEMORY), rtol=1e-5, atol=1e-7
        )


def golden_local_p():
    for window in (1, 2):
        layer = build(LocalAttention(mode="predictive", window=window, score="general", units=2))
        set_sublayer_weights(
            layer, memory_projection=[W_A], position_hidden=[U_A], position_logit=[V_A]
        )
        lengths = MASK.sum(axis=1)
        position = lengths * sigmoid((np.tanh(QUERY @ U_A) @ V_A)[:, 0])
        predicted = to_numpy(layer.predict_position(QUERY, MASK))
        np.testing.assert_allclose(predicted, position, rtol=1e-5)

        context, weights, _ = layer(QUERY, MEMORY, layer.prepare(MEMORY, MASK), mask=MASK)
        expected = np_local(general_energies(QUERY), MASK, position, window)
        np.testing.assert_allclose(to_numpy(weights), expected, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(
            to_numpy(context), np_context(expected, MEMORY), rtol=1e-5, atol=1e-7
        )


def test_literal_values():
    # Row 1: h = [[1, 0], [0, 1], [0, 0]]; row 2: h = [[0, 0], [1, 0], pad]; s = [1, 0].
    # local-m, general with W_a = I, D = 1 (sigma = 1/2), step 0: p_t = 0, window {0, 1};
    # Gaussian [1, exp(-1 / (2 * 0.25)) = exp(-2) = 0.135335]. Not renormalised.
    #   Row 1: e = [1, 0] -> softmax [0.731059, 0.268941] -> [0.731059, 0.036397, 0].
    #   Row 2: e = [0, 1] -> softmax [0.268941, 0.731059] -> [0.268941, 0.098938, 0].
    layer = build(LocalAttention(mode="local-m", window=1, score="general"))
    set_sublayer_weights(layer, memory_projection=[np.eye(2)])
    keys = layer.prepare(LITERAL_MEMORY, MASK)
    context, weights, _ = layer(LITERAL_QUERY, LITERAL_MEMORY, keys, mask=MASK, step=0)
    weights = to_numpy(weights)
    np.testing.assert_allclose(
        weights, [[0.731059, 0.036397, 0.0], [0.268941, 0.098938, 0.0]], atol=1e-6
    )
    assert weights[0, 2] == 0.0  # outside the window
    np.testing.assert_allclose(
        to_numpy(context), [[0.731059, 0.036397], [0.098938, 0.0]], atol=1e-6
    )

    # local-p, dot: a zero position network gives sigmoid(0) = 1/2, so p_t = S / 2 with S the
    # REAL length: 3 / 2 = 1.5 and 2 / 2 = 1.0 (not the padded length 3).
    #   Row 1: window |i - 1.5| <= 1 is {1, 2}; e = [0, 0] -> [1/2, 1/2]; Gaussian
    #   exp(-0.5^2 / (2 * 0.5^2)) = exp(-1/2) = 0.606531 -> [0, 0.303265, 0.303265].
    #   Row 2: window {0, 1, 2} and real {0, 1}; e = [0, 1] -> [0.268941, 0.731059];
    #   Gaussian [exp(-2), 1] -> [0.036397, 0.731059, 0].
    layer = build(LocalAttention(mode="local-p", window=1, score="dot"))
    set_sublayer_weights(
        layer, position_hidden=[np.zeros((2, 2))], position_logit=[np.zeros((2, 1))]
    )
    np.testing.assert_allclose(to_numpy(layer.predict_position(LITERAL_QUERY, MASK)), [1.5, 1.0])
    keys = layer.prepare(LITERAL_MEMORY, MASK)
    context, weights, _ = layer(LITERAL_QUERY, LITERAL_MEMORY, keys, mask=MASK)
    weights = to_numpy(weights)
    np.testing.assert_allclose(
        weights, [[0.0, 0.303265, 0.303265], [0.036397, 0.731059, 0.0]], atol=1e-6
    )
    assert weights[0, 0] == 0.0  # outside the window
    np.testing.assert_allclose(to_numpy(context), [[0.0, 0.303265], [0.731059, 0.0]], atol=1e-6)


def test_weights_zero_outside_the_window_and_on_pads(subtests):
    query, memory, mask = padded_batch(scale=1.0)
    mask[1] = False  # a row with no real token at all
    source = np.arange(memory.shape[1])[None, :]
    for mode in ("monotonic", "predictive"):
        layer = LocalAttention(mode=mode, window=2, score="general")
        layer.build(query.shape, memory.shape)
        keys = layer.prepare(memory, mask)
        for step in (0, 4, 30):  # 30 is past every sentence: local-m clamps to the last word
            with subtests.test(mode=mode, step=step):
                position = to_numpy(layer.predict_position(query, mask, step))[:, None]
                _, weights, _ = layer(query, memory, keys, mask=mask, step=step)
                weights = to_numpy(weights)
                assert np.all(weights[np.abs(source - position) > 2] == 0.0)
                assert np.all(weights[~mask] == 0.0)
                assert np.all(np.isfinite(weights)) and np.all(weights.sum(axis=-1) <= 1.0 + 1e-6)
                inside = mask & (np.abs(source - position) <= 2)
                assert np.all(weights[inside] > 0.0)


def test_predicted_position_stays_in_0_to_the_real_length():
    query, memory, mask = padded_batch()
    layer = LocalAttention(mode="predictive", window=3)
    layer.build(query.shape, memory.shape)
    set_sublayer_weights(layer, position_logit=[np.full((6, 1), 20.0)])  # saturating v_p
    lengths = mask.sum(axis=1)
    relative = []
    for seed in range(4):  # the sigmoid saturates towards both ends
        query = 100.0 * np.random.default_rng(seed).normal(size=query.shape).astype("float32")
        position = to_numpy(layer.predict_position(query, mask))
        assert np.all(position >= 0.0) and np.all(position <= lengths)
        relative.extend(position / lengths)
    assert min(relative) < 0.01 and max(relative) > 0.99
    empty = np.zeros_like(mask)  # a row without a real token: p_t = 0
    np.testing.assert_array_equal(to_numpy(layer.predict_position(query, empty)), 0.0)

    # local-m: the step, clamped to the last real word.
    layer = build(LocalAttention(mode="monotonic", window=1))
    np.testing.assert_array_equal(to_numpy(layer.predict_position(QUERY, MASK, 0)), [0.0, 0.0])
    np.testing.assert_array_equal(to_numpy(layer.predict_position(QUERY, MASK, 2)), [2.0, 1.0])
    with pytest.raises(ValueError, match="needs `step`"):
        layer.predict_position(QUERY, MASK)


def test_argument_errors_list_valid_values():
    with pytest.raises(
        ValueError, match=r"'monotonic', 'predictive', 'local-m', 'local-p'.*mode='middle'"
    ):
        LocalAttention(mode="middle")
    with pytest.raises(ValueError, match="window=0"):
        LocalAttention(window=0)
    with pytest.raises(ValueError, match="score='cosine'"):
        LocalAttention(score="cosine")
    assert LocalAttention(mode="local-p").get_config()["mode"] == "predictive"


def golden_local_p_concat():
    # The concat score inside the window: e_i = v_a^T tanh(W_q s + W_m h_i), where `units`
    # sizes both this score and the position network W_p.
    layer = build(LocalAttention(mode="predictive", window=1, score="concat", units=2))
    set_sublayer_weights(layer, memory_projection=[W_A], query_projection=[U_A],
                         energy=[V_A], position_hidden=[U_A], position_logit=[V_A])
    lengths = MASK.sum(axis=1)
    position = lengths * sigmoid((np.tanh(QUERY @ U_A) @ V_A)[:, 0])
    energies = (np.tanh(MEMORY @ W_A + (QUERY @ U_A)[:, None, :]) @ V_A)[..., 0]
    context, weights, _ = layer(QUERY, MEMORY, layer.prepare(MEMORY, MASK), mask=MASK)
    expected = np_local(energies, MASK, position, window=1)
    np.testing.assert_allclose(to_numpy(weights), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(to_numpy(context), np_context(expected, MEMORY), rtol=1e-5,
                               atol=1e-7)


def test_layer_checks(subtests, tmp_path):
    # Weights sum to at most 1 (no renormalisation after the Gaussian): normalised=False.
    # local-m takes the step as a traced tensor; local-p learns W_p, v_p through the Gaussian.
    for name, extra in (("local-m", "traced_loop"), ("local-p", "training_step")):
        make = lambda name=name: make_variant(name)  # noqa: E731
        run_checks(subtests, CHECKS + (extra,), make, tmp_path, normalised=False, variant=name)
    # local-p with the concat score (its own sublayers, sized by `units`).
    make = lambda: LocalAttention(mode="predictive", score="concat", units=8, window=2)  # noqa: E731
    run_checks(subtests, CHECKS + ("training_step",), make, tmp_path, normalised=False,
               variant="local-p-concat")


def test_golden_values(subtests):
    for case in (
        golden_local_m_three_steps_with_clamping,
        golden_local_p,
        golden_local_p_concat,
    ):
        with subtests.test(case.__name__):
            case()
