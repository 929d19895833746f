import numpy as np
import pytest

from keras_rnmt.attention import BahdanauAttention

from .helpers import (
    CHECKS,
    LITERAL_MEMORY,
    LITERAL_QUERY,
    MASK,
    MEMORY,
    PICK_FIRST,
    PICK_UNIT_0,
    QUERY,
    U_A,
    V_A,
    W_A,
    build,
    make_variant,
    np_additive,
    np_context,
    np_masked_softmax,
    run_checks,
    set_sublayer_weights,
    to_numpy,
)


def test_golden_values_match_numpy_eq_5_to_7():
    layer = build(BahdanauAttention(units=2))
    set_sublayer_weights(layer, memory_projection=[W_A], query_projection=[U_A], energy=[V_A])
    keys = layer.prepare(MEMORY, MASK)
    context, weights, state = layer(QUERY, MEMORY, keys, mask=MASK)

    expected = np_masked_softmax(np_additive(QUERY, MEMORY, W_A, U_A, V_A), MASK)
    np.testing.assert_allclose(to_numpy(keys), MEMORY @ W_A, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(weights), expected, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(to_numpy(context), np_context(expected, MEMORY), rtol=1e-5)
    assert state == ()


def test_literal_values():
    # W_a picks h[0], U_a = 0, v_a picks unit 0: e_i = tanh(h_i[0]).
    # Row 1: e = [tanh(1), 0, 0] = [0.761594, 0, 0]; alpha = [e^0.761594, 1, 1] / (e^0.761594 + 2)
    #   = [2.141688, 1, 1] / 4.141688 = [0.517105, 0.241447, 0.241447]; c = [0.517105, 0.241447].
    # Row 2 (last word a pad): e = [0, 0.761594]; alpha = [sigmoid(-0.761594), sigmoid(0.761594)]
    #   = [0.318300, 0.681700], 0 on the pad; c = 0.681700 * [1, 0].
    layer = build(BahdanauAttention(units=2))
    set_sublayer_weights(
        layer,
        memory_projection=[PICK_FIRST],
        query_projection=[np.zeros((2, 2))],
        energy=[PICK_UNIT_0],
    )
    keys = layer.prepare(LITERAL_MEMORY, MASK)
    context, weights, _ = layer(LITERAL_QUERY, LITERAL_MEMORY, keys, mask=MASK)
    np.testing.assert_allclose(
        to_numpy(weights), [[0.517105, 0.241447, 0.241447], [0.318300, 0.681700, 0.0]], atol=1e-6
    )
    np.testing.assert_allclose(
        to_numpy(context), [[0.517105, 0.241447], [0.681700, 0.0]], atol=1e-6
    )


def test_units_is_required_and_checked():
    with pytest.raises(ValueError, match="units"):
        BahdanauAttention(units=0)
    with pytest.raises(TypeError):
        BahdanauAttention()


def test_layer_checks(subtests, tmp_path):
    run_checks(subtests, CHECKS, lambda: make_variant("bahdanau"), tmp_path)
