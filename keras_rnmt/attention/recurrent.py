"""Recurrent attention modeling (Yang et al.): a dynamic memory per source word, Eq. 10-13."""

import keras
from keras import ops

from keras_rnmt.attention.bahdanau import BahdanauAttention
from keras_rnmt.attention.checks import check_positive_int
from keras_rnmt.attention.remat import recomputed_under_jax
from keras_rnmt.direct_call import calls_directly


def attention_window(weights, k):
    """The window of attention weights around every source word (Yang et al. §2.2).

    `window[b, i] = [alpha_{i-k}, ..., alpha_i, ..., alpha_{i+k}]`, with zeros beyond the
    edges of the sentence (and, since weights are 0 on pads, on pads too). Vectorised: the
    weights are padded with `k` zeros on each side and `2k + 1` shifted slices are stacked.

    Args:
        weights: tensor `(B, S)`, attention weights of one step.
        k: int >= 0, the half-width (window size `2k + 1`).

    Returns:
        tensor `(B, S, 2k + 1)` in the dtype of `weights`.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 0:
        raise ValueError(f"attention_window: `k` must be an int >= 0. Received: k={k!r}")
    if k == 0:
        return weights[:, :, None]
    padded = ops.pad(weights, [[0, 0], [k, k]])  # batch x (src_len + 2k)
    shifted = [padded[:, m : m - 2 * k] for m in range(2 * k)] + [padded[:, 2 * k :]]
    return ops.stack(shifted, axis=-1)


def memory_norms(state):
    """The L2 norm ||d_ij|| of every source word's dynamic memory, for the memory-norm panel.

    Args:
        state: a `RecurrentAttention` state `(weights, d_h, d_c)` whose `d_h` has shape
            `(..., S, memory_units)`, e.g. from `TranslationModel.attention_states` with
            leaves `(B, T, S, ...)`.

    Returns:
        float32 tensor `(..., S)`, e.g. `(B, T, S)`: row j, column i is ||d_ij||.
    """
    memory_h = ops.cast(state[1], "float32")
    return ops.sqrt(ops.sum(ops.square(memory_h), axis=-1))


@keras.saving.register_keras_serializable(package="keras_rnmt")
class RecurrentAttention(BahdanauAttention):
    """Recurrent attention modeling: additive attention with a dynamic memory per word.

    Every source word `i` carries a dynamic memory `d_ij`, updated at every target step `j` by
    one LSTM shared by all words, whose input is the window of the previous step's attention
    weights around `i` (Yang et al. §2.2):

        alpha~_ij = [alpha_{i-k, j-1}, ..., alpha_{i+k, j-1}]            (window, 2k+1)
        d_ij = LSTM(d_{i,j-1}, alpha~_ij)                                  (10)
        e_ij = v_a^T tanh(W_a [h_i; d_ij] + U_a s_j)
             = v_a^T tanh(W_h h_i + W_d d_ij + U_a s_j)                   (11)
        alpha_ij = softmax_i(e_ij)                                         (12)
        c_j = sum_i alpha_ij h_i                                           (13)

    The window of Eq. 10 holds the weights of the PREVIOUS step `j - 1`: at step `j` the
    layer (1) builds the window from the weights kept in its state, (2) updates `d` with the
    LSTM, (3) scores, (4) normalises, (5) stores the new weights in the state for step
    `j + 1`. Before the first step the previous weights are all zeros, so the first LSTM
    input is all zeros. Beyond the edges of the sentence the window holds zeros; pads hold
    weight 0, so they contribute zeros too. `W_a` is split column-wise into `W_h` (computed
    once per sentence by `prepare()`) and `W_d`. The context reads `h_i` only (Eq. 13).

    `window=0` is the paper's "window 1" (a per-word coverage memory); `window=5` its
    "window 11", the best setting. The LSTM runs on all `B * S` words at once (a reshape to
    `(B * S, 2k + 1)`), never in a Python loop over words. Under JAX the backward pass
    recomputes its gates and the score's tanh instead of storing them for every target step
    (`recomputed_under_jax`).

    State: `(previous_weights (B, S), d_h (B, S, memory_units), d_c (B, S, memory_units))`,
    all float32; `d_h` is the memory `d_ij` used in the score, `d_c` the LSTM carry.

    Sublayers: those of `BahdanauAttention` (`memory_projection` = `W_h`,
    `query_projection` = `U_a`, `energy` = `v_a`), plus `memory_cell` (a
    `keras.layers.LSTMCell(memory_units)`, gates in Keras order i, f, c, o) and
    `dynamic_memory_projection` (`W_d`, `memory_units -> units`, no bias).

    Args:
        units: int. Size of the hidden layer of the score.
        window: int >= 0, the half-width `k` of the window of `2k + 1` previous weights.
            Defaults to `5` (the paper's window 11).
        memory_units: int or None. Size of the dynamic memory `d_ij`; `None` uses
            `max(units // 2, 1)` (the paper: 1000 hidden units, memory 500). Defaults to `None`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        query: tensor `(B, Dq)`, the decoder state `s_j`.
        memory: tensor `(B, S, Dm)`, the annotations `h_i`.
        keys: `W_h h`, the tensor `(B, S, units)` returned by `prepare()`.
        mask: bool tensor `(B, S)`, True on real tokens, or `None`.
        state: the tuple from `initial_state()` or the previous call.
        step: unused.
        training: unused.

    Returns:
        `(context (B, Dm), weights (B, S) float32, new_state)`.

    Example:

    ```python
    import numpy as np
    from keras_rnmt.attention import RecurrentAttention

    attention = RecurrentAttention(units=8, window=1, memory_units=4)
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
        - [Yang et al., 2017](https://arxiv.org/abs/1609.05284), §2.2, Eq. 10-13.
    """

    def __init__(self, units, window=5, memory_units=None, **kwargs):
        super().__init__(units=units, **kwargs)
        if isinstance(window, bool) or not isinstance(window, int) or window < 0:
            raise ValueError(
                f"{type(self).__name__}: `window` (the half-width k) must be an int >= 0. "
                f"Received: window={window!r}"
            )
        self.window = window
        if memory_units is None:
            memory_units = max(units // 2, 1)
        self.memory_units = check_positive_int(type(self).__name__, "memory_units", memory_units)

    def build(self, query_shape, memory_shape):
        super().build(query_shape, memory_shape)
        self.memory_cell = keras.layers.LSTMCell(
            self.memory_units, dtype=self.dtype_policy, name="memory_cell"
        )
        self.memory_cell.build((None, 2 * self.window + 1))
        self.dynamic_memory_projection = self._dense(
            self.units, "dynamic_memory_projection", (None, None, self.memory_units)
        )

    def initial_state(self, memory, mask=None):
        self._check_built("initial_state")
        batch_src = tuple(ops.shape(memory)[:2])
        previous_weights = ops.zeros(batch_src, dtype="float32")
        memory_h = ops.zeros(batch_src + (self.memory_units,), dtype="float32")
        return previous_weights, memory_h, ops.zeros_like(memory_h)

    def memory_inputs(self, state):
        """The LSTM input of Eq. 10: the window of the previous weights, `(B, S, 2k + 1)`."""
        return attention_window(state[0], self.window)

    def advance_state(self, query, keys, mask, state):
        previous_weights, memory_h, memory_c = state
        inputs = self.memory_inputs(state)  # batch x src_len x (2k + 1)
        batch_src = tuple(ops.shape(inputs)[:2])

        def flat(tensor):  # (batch * src_len) x features: one LSTM step for every word
            return ops.reshape(tensor, (-1, ops.shape(tensor)[-1]))

        def lstm(inputs, memory_h, memory_c):
            cell = self.memory_cell
            call = cell.call if calls_directly(cell, inputs) else cell  # direct_call.py
            _, (memory_h, memory_c) = call(inputs, [memory_h, memory_c])
            return memory_h, memory_c

        # The backward pass recomputes the gates instead of stacking them for every step.
        memory_h, memory_c = recomputed_under_jax(lstm)(flat(inputs), flat(memory_h),
                                                        flat(memory_c))
        memory_h = ops.reshape(memory_h, batch_src + (self.memory_units,))
        memory_c = ops.reshape(memory_c, batch_src + (self.memory_units,))
        return previous_weights, memory_h, memory_c

    def score(self, query, keys, mask, state, step):
        memory_h = ops.cast(state[1], self.compute_dtype)
        return self.additive_energies(query, keys, extra=memory_h,
                                      extra_projection=self.dynamic_memory_projection)

    def update_state(self, weights, query, keys, mask, state):
        _, memory_h, memory_c = state
        return weights, memory_h, memory_c

    def get_config(self):
        config = super().get_config()
        config.update({"window": self.window, "memory_units": self.memory_units})
        return config
