"""Coverage attention (Tu et al., 2016): a coverage vector per source word fed into the score."""

import keras
from keras import ops

from keras_rnmt.attention.bahdanau import BahdanauAttention
from keras_rnmt.attention.checks import check_choice, check_positive_int

COVERAGE_KINDS = ("neural", "linguistic")


@keras.saving.register_keras_serializable(package="keras_rnmt")
class CoverageAttention(BahdanauAttention):
    """Additive attention with a coverage vector per source word (Tu et al., 2016).

    The coverage `C_{j-1,i}` of source word `i` summarises the attention it received at the
    previous target steps, and enters the additive score (Tu et al. §3.2, "coverage-based
    attention model"; `s_j` is this layer's query):

        e_ji = v_a^T tanh(W_a h_i + U_a s_j + V_a C_{j-1,i})

    After the softmax the coverage is updated with this step's weights `alpha_ji`
    (Tu et al. §3.1), with `C_{0,i} = 0`:

        linguistic: C_{j,i} = C_{j-1,i} + alpha_ji / Phi_i,   Phi_i = N * sigmoid(U_f h_i)
        neural:     C_{j,i} = GRU(C_{j-1,i}, [alpha_ji; h_i; s_j])

    `Phi_i` is the fertility of word `i` (how many target words it produces, at most `N`),
    computed once per sentence by `prepare()` and kept >= 1e-6 so the division stays finite.
    The neural update is a GRU (Cho et al., 2014) in the variant of Keras'
    `GRU(reset_after=True)`, the reset gate applied after the recurrent product:

        x = W_x [alpha_ji; h_i; s_j] + b          (3 * coverage_units, split into z, r, n)
        z = sigmoid(x_z + U_z C), r = sigmoid(x_r + U_r C), n = tanh(x_n + r * (U_n C))
        C_{j,i} = z * C_{j-1,i} + (1 - z) * n

    where the `h_i` part of `W_x` (with the bias) is computed once per sentence by `prepare()`
    and the update runs on all words at once (no loop over words). Pads receive weight 0, so
    their linguistic coverage stays 0; their neural coverage is irrelevant and finite.

    State: `(coverage,)`, float32 `(B, S, coverage_units)` (`coverage_units` is 1 for
    linguistic coverage).

    Sublayers: those of `BahdanauAttention` (`memory_projection` = `W_a`,
    `query_projection` = `U_a`, `energy` = `v_a`) plus `coverage_projection` (`V_a`,
    `coverage_units -> units`); linguistic: `fertility` (`U_f`, `Dm -> 1`, no bias); neural:
    `coverage_memory_input` (`h_i` part of `W_x` with the bias `b`), `coverage_weight_input`,
    `coverage_query_input` (the `alpha` and `s` parts of `W_x`), `coverage_recurrent`
    (`[U_z, U_r, U_n]`), each `-> 3 * coverage_units`, gates in order z, r, n.

    Args:
        units: int. Size of the hidden layer of the score.
        coverage: str, `"neural"` or `"linguistic"`. Defaults to `"neural"`.
        coverage_units: int or None. Size of the coverage vector: `None` means 1 for
            linguistic (the only valid size there) and 10 for neural (Tu et al. compare 1 and
            10). Defaults to `None`.
        max_fertility: float > 0, `N` of the linguistic fertility. Defaults to `2.0`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        query: tensor `(B, Dq)`.
        memory: tensor `(B, S, Dm)`.
        keys: the tuple returned by `prepare()`: `(W_a h (B, S, units), Phi (B, S) float32)`
            for linguistic, `(W_a h, W_x^h h + b (B, S, 3 * coverage_units))` for neural.
        mask: bool tensor `(B, S)`, True on real tokens, or `None`.
        state: the tuple from `initial_state()` or the previous call.
        step: unused.
        training: unused.

    Returns:
        `(context (B, Dm), weights (B, S) float32, new_state)`.

    Example:

    ```python
    import numpy as np
    from keras_rnmt.attention import CoverageAttention

    attention = CoverageAttention(units=8, coverage="linguistic")
    query = np.random.rand(4, 6).astype("float32")  # batch x query_dim
    memory = np.random.rand(4, 20, 6).astype("float32")  # batch x src_len x memory_dim
    mask = np.arange(20) < np.array([[20], [1], [2], [7]])  # real lengths 20, 1, 2, 7
    attention.build(query.shape, memory.shape)
    keys = attention.prepare(memory, mask)
    state = attention.initial_state(memory, mask)
    for step in range(3):
        context, weights, state = attention(query, memory, keys, mask=mask, state=state)
    ```

    References:
        - [Tu et al., 2016](https://arxiv.org/abs/1601.04811), §3.
    """

    def __init__(self, units, coverage="neural", coverage_units=None, max_fertility=2.0, **kwargs):
        super().__init__(units=units, **kwargs)
        name = type(self).__name__
        self.coverage = check_choice(name, "coverage", coverage, COVERAGE_KINDS)
        if coverage_units is None:
            coverage_units = 1 if coverage == "linguistic" else 10
        self.coverage_units = check_positive_int(name, "coverage_units", coverage_units)
        if coverage == "linguistic" and coverage_units != 1:
            raise ValueError(
                f"{name}: linguistic coverage is a scalar per word, so `coverage_units` must be "
                f"1 or None. Received: coverage_units={coverage_units!r}"
            )
        if (
            isinstance(max_fertility, bool)
            or not isinstance(max_fertility, (int, float))
            or (max_fertility <= 0)
        ):
            raise ValueError(
                f"{name}: `max_fertility` must be a number > 0. "
                f"Received: max_fertility={max_fertility!r}"
            )
        self.max_fertility = float(max_fertility)

    def build(self, query_shape, memory_shape):
        super().build(query_shape, memory_shape)
        size = self.coverage_units
        self.coverage_projection = self._dense(
            self.units, "coverage_projection", (None, None, size)
        )
        if self.coverage == "linguistic":
            self.fertility = self._dense(1, "fertility", memory_shape)
            return
        gates = 3 * size
        self.coverage_memory_input = self._dense(
            gates, "coverage_memory_input", memory_shape, use_bias=True
        )
        self.coverage_weight_input = self._dense(gates, "coverage_weight_input", (None, None, 1))
        self.coverage_query_input = self._dense(gates, "coverage_query_input", query_shape)
        self.coverage_recurrent = self._dense(gates, "coverage_recurrent", (None, None, size))

    def prepare(self, memory, mask=None):
        self._check_built("prepare")
        projected = self.memory_projection(memory)  # batch x src_len x units
        if self.coverage == "linguistic":
            logit = ops.cast(ops.squeeze(self.fertility(memory), axis=-1), "float32")
            fertility = self.max_fertility * ops.sigmoid(logit)  # batch x src_len
            return projected, ops.maximum(fertility, 1e-6)
        return projected, self.coverage_memory_input(memory)  # batch x src_len x 3*cov

    def initial_state(self, memory, mask=None):
        self._check_built("initial_state")
        shape = tuple(ops.shape(memory)[:2]) + (self.coverage_units,)
        return (ops.zeros(shape, dtype="float32"),)

    def score(self, query, keys, mask, state, step):
        coverage = ops.cast(state[0], self.compute_dtype)
        return self.additive_energies(query, keys[0], extra=coverage,
                                      extra_projection=self.coverage_projection)

    def update_state(self, weights, query, keys, mask, state):
        (coverage,) = state  # float32, batch x src_len x coverage_units
        if self.coverage == "linguistic":
            fertility = ops.cast(keys[1], "float32")
            return (coverage + (weights / fertility)[:, :, None],)
        inputs = (
            keys[1]
            + self.coverage_weight_input(ops.cast(weights, self.compute_dtype)[:, :, None])
            + self.coverage_query_input(query)[:, None, :]
        )
        recurrent = self.coverage_recurrent(ops.cast(coverage, self.compute_dtype))
        x_z, x_r, x_n = ops.split(ops.cast(inputs, "float32"), 3, axis=-1)
        u_z, u_r, u_n = ops.split(ops.cast(recurrent, "float32"), 3, axis=-1)
        update = ops.sigmoid(x_z + u_z)
        reset = ops.sigmoid(x_r + u_r)
        candidate = ops.tanh(x_n + reset * u_n)
        return (update * coverage + (1.0 - update) * candidate,)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "coverage": self.coverage,
                "coverage_units": self.coverage_units,
                "max_fertility": self.max_fertility,
            }
        )
        return config
