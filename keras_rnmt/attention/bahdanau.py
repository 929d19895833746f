"""Additive (Bahdanau / "concat"-style MLP) attention, Yang et al. Eq. 5."""

import keras

from keras_rnmt.attention.additive import additive_energies
from keras_rnmt.attention.base import BaseAttention
from keras_rnmt.attention.checks import check_positive_int


@keras.saving.register_keras_serializable(package="keras_rnmt")
class BahdanauAttention(BaseAttention):
    """Additive attention: a one-hidden-layer MLP scores each source word.

    For the decoder state `s_j` (query) and annotation `h_i` (memory), Yang et al. Eq. 5-7:

        e_ij = v_a^T tanh(W_a h_i + U_a s_j)        (5)
        alpha_ij = softmax_i(e_ij)                    (6)
        c_j = sum_i alpha_ij h_i                      (7)

    `W_a h_i` does not depend on the target position, so `prepare()` computes it once per
    sentence. None of the three projections has a bias, as in the equations. The layer is
    stateless: `initial_state()` is `()`.

    Sublayers (created in `build()`): `memory_projection` (`W_a`, `Dm -> units`),
    `query_projection` (`U_a`, `Dq -> units`), `energy` (`v_a`, `units -> 1`).

    Args:
        units: int. Size of the hidden layer of the score (`W_a`, `U_a` output size).
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        query: tensor `(B, Dq)`.
        memory: tensor `(B, S, Dm)`.
        keys: `W_a h`, the tensor `(B, S, units)` returned by `prepare()`.
        mask: bool tensor `(B, S)`, True on real tokens, or `None`.
        state: `()`.
        step: unused.
        training: unused.

    Returns:
        `(context (B, Dm), weights (B, S) float32, ())`.

    Example:

    ```python
    import numpy as np
    from keras_rnmt.attention import BahdanauAttention

    attention = BahdanauAttention(units=8)
    query = np.random.rand(4, 6).astype("float32")  # batch x query_dim
    memory = np.random.rand(4, 20, 6).astype("float32")  # batch x src_len x memory_dim
    mask = np.arange(20) < np.array([[20], [1], [2], [7]])  # real lengths 20, 1, 2, 7
    attention.build(query.shape, memory.shape)
    keys = attention.prepare(memory, mask)
    context, weights, state = attention(query, memory, keys, mask=mask, state=())
    ```

    References:
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473)
        - [Yang et al., 2017](https://arxiv.org/abs/1609.05284), Eq. 5-7.
    """

    def __init__(self, units, **kwargs):
        check_positive_int(type(self).__name__, "units", units)
        super().__init__(units=units, **kwargs)

    def build(self, query_shape, memory_shape):
        super().build(query_shape, memory_shape)
        self.memory_projection = self._dense(self.units, "memory_projection", memory_shape)
        self.query_projection = self._dense(self.units, "query_projection", query_shape)
        self.energy = self._dense(1, "energy", (None, None, self.units))

    def prepare(self, memory, mask=None):
        self._check_built("prepare")
        return self.memory_projection(memory)  # batch x src_len x units

    def score(self, query, keys, mask, state, step):
        return self.additive_energies(query, keys)

    def additive_energies(self, query, projected_memory, extra=None, extra_projection=None):
        """`v_a^T tanh(projected_memory + U_a s [+ extra])`, shape `(B, S)`.

        Args:
            query: tensor `(B, Dq)`.
            projected_memory: `W_a h`, tensor `(B, S, units)`.
            extra: optional tensor `(B, S, units)` added inside the tanh (the dynamic memory
                term of Yang et al. Eq. 11, the coverage term of Tu et al.), or `(B, S, d)`
                with `extra_projection`.
            extra_projection: optional layer `d -> units` applied to `extra` (see
                `keras_rnmt.attention.additive.additive_energies`).
        """
        return additive_energies(self.energy, projected_memory, self.query_projection(query),
                                 extra, extra_projection)
