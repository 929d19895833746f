"""Luong global attention with the dot, general and concat scores."""

import keras
from keras import ops

from keras_rnmt.attention.additive import additive_energies
from keras_rnmt.attention.base import BaseAttention
from keras_rnmt.attention.checks import check_choice

LUONG_SCORES = ("dot", "general", "concat")


@keras.saving.register_keras_serializable(package="keras_rnmt")
class LuongAttention(BaseAttention):
    """Luong global attention: a multiplicative or concat score over every source word.

    For the decoder state `s` (Luong's `h_t`) and annotation `h_i` (Luong's `h̄_s`), the score
    of Luong et al. 2015, §3.1 is one of

        dot:      e_i = s^T h_i                          (needs Dq == Dm)
        general:  e_i = s^T W_a h_i
        concat:   e_i = v_a^T tanh(W_a [s; h_i]) = v_a^T tanh(W_q s + W_m h_i)

    followed by `alpha_i = softmax_i(e_i)` and `c = sum_i alpha_i h_i`. The memory-side product
    (`W_a h_i` for general, `W_m h_i` for concat, `h_i` for dot) is computed once per
    sentence by `prepare()`. For concat, `W_a` is split column-wise into a query part `W_q`
    and a memory part `W_m`, which is the same matrix acting on the concatenation. No
    projection has a bias. The layer is stateless.

    Sublayers: general: `memory_projection` (`W_a`, `Dm -> Dq`); concat: `memory_projection`
    (`W_m`, `Dm -> units`), `query_projection` (`W_q`, `Dq -> units`), `energy` (`v_a`).

    Args:
        score: str, one of `"dot"`, `"general"`, `"concat"`. Defaults to `"general"`.
        units: int or None. Hidden size of the concat score; `None` uses the query size.
            Ignored by dot and general. Defaults to `None`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        query: tensor `(B, Dq)`.
        memory: tensor `(B, S, Dm)`.
        keys: the tensor `(B, S, Dq or units)` returned by `prepare()`.
        mask: bool tensor `(B, S)`, True on real tokens, or `None`.
        state: `()`.
        step: unused.
        training: unused.

    Returns:
        `(context (B, Dm), weights (B, S) float32, ())`.

    Example:

    ```python
    import numpy as np
    from keras_rnmt.attention import LuongAttention

    attention = LuongAttention(score="general")
    query = np.random.rand(4, 6).astype("float32")  # batch x query_dim
    memory = np.random.rand(4, 20, 6).astype("float32")  # batch x src_len x memory_dim
    mask = np.arange(20) < np.array([[20], [1], [2], [7]])  # real lengths 20, 1, 2, 7
    attention.build(query.shape, memory.shape)
    keys = attention.prepare(memory, mask)
    context, weights, state = attention(query, memory, keys, mask=mask)
    ```

    References:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025), §3.1.
    """

    def __init__(self, score="general", units=None, **kwargs):
        super().__init__(units=units, **kwargs)
        self.score_name = check_choice(type(self).__name__, "score", score, LUONG_SCORES)

    def build(self, query_shape, memory_shape):
        super().build(query_shape, memory_shape)
        if self.score_name == "dot" and self.query_dim != self.memory_dim:
            raise ValueError(
                f"{type(self).__name__}: score='dot' needs a query and a memory of the same "
                f"size, but the query has size {self.query_dim} and the memory {self.memory_dim}. "
                "Use score='general' or score='concat', or make the sizes match."
            )
        if self.score_name == "general":
            self.memory_projection = self._dense(self.query_dim, "memory_projection", memory_shape)
        elif self.score_name == "concat":
            hidden = self.units or self.query_dim
            self.memory_projection = self._dense(hidden, "memory_projection", memory_shape)
            self.query_projection = self._dense(hidden, "query_projection", query_shape)
            self.energy = self._dense(1, "energy", (None, None, hidden))

    def prepare(self, memory, mask=None):
        self._check_built("prepare")
        if self.score_name == "dot":
            return ops.cast(memory, self.compute_dtype)
        return self.memory_projection(memory)

    def score(self, query, keys, mask, state, step):
        if self.score_name == "concat":
            return additive_energies(self.energy, keys, self.query_projection(query))
        return ops.einsum("bd,bsd->bs", query, keys)

    def get_config(self):
        config = super().get_config()
        config.update({"score": self.score_name})
        return config
