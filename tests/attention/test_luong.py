import numpy as np
import pytest

from keras_rnmt.attention import LuongAttention

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


def run_once(layer, query=QUERY, memory=MEMORY, mask=MASK):
    keys = layer.prepare(memory, mask)
    context, weights, state = layer(query, memory, keys, mask=mask)
    assert state == ()
    return to_numpy(context), to_numpy(weights)


def golden_dot():
    return build(LuongAttention(score="dot")), np.einsum("bd,bsd->bs", QUERY, MEMORY)


def golden_general():
    layer = build(LuongAttention(score="general"))
    set_sublayer_weights(layer, memory_projection=[W_A])
    return layer, np.einsum("bd,bsd->bs", QUERY, MEMORY @ W_A)  # s^T (W_a h_i)


def golden_concat():
    # v_a^T tanh(W_a [s; h_i]) with W_a = [U_A; W_A] stacked on the input axis.
    layer = build(LuongAttention(score="concat", units=2))
    set_sublayer_weights(layer, memory_projection=[W_A], query_projection=[U_A], energy=[V_A])
    stacked = np.concatenate([U_A, W_A], axis=0)  # (Dq + Dm) x units
    concat = np.concatenate([np.repeat(QUERY[:, None], 3, axis=1), MEMORY], axis=-1)
    energies = (np.tanh(concat @ stacked) @ V_A)[..., 0]
    np.testing.assert_allclose(energies, np_additive(QUERY, MEMORY, W_A, U_A, V_A), rtol=1e-6)
    return layer, energies


def test_golden_values(subtests):
    for make in (golden_dot, golden_general, golden_concat):
        with subtests.test(score=make.__name__):
            layer, energies = make()
            expected = np_masked_softmax(energies, MASK)
            context, weights = run_once(layer)
            np.testing.assert_allclose(weights, expected, rtol=1e-5, atol=1e-7)
            np.testing.assert_allclose(context, np_context(expected, MEMORY), rtol=1e-5, atol=1e-7)


def test_literal_values(subtests):
    # Row 1: h = [[1, 0], [0, 1], [0, 0]]; row 2: h = [[0, 0], [1, 0], pad]; s = [1, 0].
    def run(layer):
        return run_once(layer, LITERAL_QUERY, LITERAL_MEMORY, MASK)

    with subtests.test("dot"):
        # Row 1: e = [1, 0, 0]; alpha = [e, 1, 1] / (e + 2) = [0.576117, 0.211942, 0.211942].
        # Row 2: e = [0, 1]; alpha = [1, e] / (1 + e) = [0.268941, 0.731059], 0 on the pad.
        context, weights = run(build(LuongAttention(score="dot")))
        np.testing.assert_allclose(
            weights, [[0.576117, 0.211942, 0.211942], [0.268941, 0.731059, 0.0]], atol=1e-6
        )
        assert weights[1, 2] == 0.0
        np.testing.assert_allclose(context, [[0.576117, 0.211942], [0.731059, 0.0]], atol=1e-6)
    with subtests.test("general"):
        # W_a = 2 I. Row 1: e = [2, 0, 0]; alpha = [e^2, 1, 1] / (e^2 + 2)
        #   = [0.786986, 0.106507, 0.106507]. Row 2: e = [0, 2] -> [0.119203, 0.880797].
        layer = build(LuongAttention(score="general"))
        set_sublayer_weights(layer, memory_projection=[2.0 * np.eye(2)])
        context, weights = run(layer)
        np.testing.assert_allclose(
            weights, [[0.786986, 0.106507, 0.106507], [0.119203, 0.880797, 0.0]], atol=1e-6
        )
        np.testing.assert_allclose(context, [[0.786986, 0.106507], [0.880797, 0.0]], atol=1e-6)
    with subtests.test("concat"):
        # W_m picks h[0], W_q = 0, v picks unit 0: e_i = tanh(h_i[0]), as for Bahdanau.
        # Row 1: [0.517105, 0.241447, 0.241447]; row 2: [0.318300, 0.681700].
        layer = build(LuongAttention(score="concat", units=2))
        set_sublayer_weights(
            layer,
            memory_projection=[PICK_FIRST],
            query_projection=[np.zeros((2, 2))],
            energy=[PICK_UNIT_0],
        )
        _, weights = run(layer)
        np.testing.assert_allclose(
            weights, [[0.517105, 0.241447, 0.241447], [0.318300, 0.681700, 0.0]], atol=1e-6
        )


def test_argument_errors_and_defaults():
    layer = build(LuongAttention(score="concat"), np.zeros((1, 3), "float32"), MEMORY)
    assert tuple(layer.query_projection.kernel.shape) == (3, 3)  # units default: query size
    assert tuple(layer.memory_projection.kernel.shape) == (2, 3)
    with pytest.raises(ValueError, match=r"'dot', 'general', 'concat'.*score='cosine'"):
        LuongAttention(score="cosine")
    with pytest.raises(ValueError, match=r"score='dot'.*size 4.*memory 2"):
        LuongAttention(score="dot").build((1, 4), (1, 3, 2))


def test_layer_checks(subtests, tmp_path):
    for score in ("dot", "general", "concat"):
        make = lambda score=score: make_variant(score)  # noqa: E731
        run_checks(subtests, CHECKS, make, tmp_path, variant=score)
