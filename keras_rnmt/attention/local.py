"""Luong local attention: a window of 2D+1 source words around an aligned position p_t."""

import keras
from keras import ops

from keras_rnmt.attention.checks import check_choice, check_positive_int
from keras_rnmt.attention.luong import LuongAttention

LOCAL_MODES = ("monotonic", "predictive")
MODE_ALIASES = {"local-m": "monotonic", "local-p": "predictive"}


@keras.saving.register_keras_serializable(package="keras_rnmt")
class LocalAttention(LuongAttention):
    """Luong local attention, monotonic (local-m) or predictive (local-p).

    An aligned position `p_t` is chosen for target step `t` (Luong et al. 2015, §3.2):

        local-m:  p_t = t                                     (the 0-based `step`)
        local-p:  p_t = S * sigmoid(v_p^T tanh(W_p s_t))      with S the REAL source length

    where `S` is the number of real (unpadded) tokens of each row, read from the mask. The
    Luong score (`dot`, `general` or `concat`, see `LuongAttention`) is then normalised by a
    softmax over the real tokens inside the window `|i - p_t| <= D` only, and multiplied by a
    Gaussian centred on `p_t`:

        a_t(i) = softmax_{i in window}(score(s_t, h_i)) * exp(-(i - p_t)^2 / (2 sigma^2)),
        sigma = D / 2.

    As in Luong et al., the weights are NOT renormalised after the Gaussian: they sum to at most
    1 (only the global variants' weights sum to exactly 1). They are exactly 0 outside the
    window and on pads. Source positions `i` are 0-based; `p_t` is a float32 `(B,)` tensor,
    clipped to `[0, S]` for local-p (the sigmoid already keeps it there) and to `[0, S - 1]`
    for local-m, so a target longer than the source keeps attending to the last real words
    instead of to an empty window. `predict_position()` returns `p_t`.

    Gradients reach `W_p`, `v_p` through the Gaussian (the window edges are a hard mask).
    The layer is stateless.

    Sublayers: those of `LuongAttention` for the score; local-p adds `position_hidden`
    (`W_p`, `Dq -> units` or `Dq`) and `position_logit` (`v_p`, `-> 1`), without biases.

    Args:
        mode: str, `"monotonic"` or `"predictive"` (aliases `"local-m"`, `"local-p"`).
            Defaults to `"predictive"`.
        window: int >= 1, the half-width `D` of the window (Luong used 10). Defaults to `10`.
        score: str, the Luong score: `"dot"`, `"general"` or `"concat"`. Defaults to
            `"general"`.
        units: int or None. Hidden size of the concat score and of `W_p`; `None` uses the query
            size. Defaults to `None`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        query: tensor `(B, Dq)`.
        memory: tensor `(B, S, Dm)`.
        keys: what `prepare()` returned (see `LuongAttention`).
        mask: bool tensor `(B, S)`, True on real tokens, or `None`.
        state: `()`.
        step: int scalar or scalar tensor, the 0-based target position. Required by local-m,
            unused by local-p.
        training: unused.

    Returns:
        `(context (B, Dm), weights (B, S) float32, ())`.

    Example:

    ```python
    import numpy as np
    from keras_rnmt.attention import LocalAttention

    attention = LocalAttention(mode="monotonic", window=2)
    query = np.random.rand(4, 6).astype("float32")  # batch x query_dim
    memory = np.random.rand(4, 20, 6).astype("float32")  # batch x src_len x memory_dim
    mask = np.arange(20) < np.array([[20], [1], [2], [7]])  # real lengths 20, 1, 2, 7
    attention.build(query.shape, memory.shape)
    keys = attention.prepare(memory, mask)
    context, weights, state = attention(query, memory, keys, mask=mask, step=3)
    ```

    References:
        - [Luong et al., 2015](https://arxiv.org/abs/1508.04025), §3.2.
    """

    def __init__(self, mode="predictive", window=10, score="general", units=None, **kwargs):
        super().__init__(score=score, units=units, **kwargs)
        mode = MODE_ALIASES.get(mode, mode)
        valid = LOCAL_MODES + tuple(MODE_ALIASES)
        self.mode = check_choice(type(self).__name__, "mode", mode, valid)
        self.window = check_positive_int(type(self).__name__, "window", window)

    def build(self, query_shape, memory_shape):
        super().build(query_shape, memory_shape)
        if self.mode == "predictive":
            hidden = self.units or self.query_dim
            self.position_hidden = self._dense(hidden, "position_hidden", query_shape)
            self.position_logit = self._dense(1, "position_logit", (None, hidden))

    def predict_position(self, query, mask, step=None):
        """The aligned source position `p_t`, float32 `(B,)`.

        Args:
            query: tensor `(B, Dq)`.
            mask: bool tensor `(B, S)`, True on real tokens (`S` = its row sums).
            step: the 0-based target position, required when `mode="monotonic"`.
        """
        mask = ops.cast(mask, "bool")
        length = ops.sum(ops.cast(mask, "float32"), axis=-1)  # batch
        if self.mode == "monotonic":
            if step is None:
                raise ValueError(
                    f"{type(self).__name__}(mode='monotonic') needs `step`, the 0-based "
                    "target position. Received: step=None"
                )
            position = ops.cast(step, "float32") * ops.ones_like(length)
            return ops.minimum(ops.maximum(position, 0.0), ops.maximum(length - 1.0, 0.0))
        query = ops.cast(query, self.compute_dtype)
        logit = self.position_logit(ops.tanh(self.position_hidden(query)))[:, 0]
        position = length * ops.sigmoid(ops.cast(logit, "float32"))
        return ops.minimum(ops.maximum(position, 0.0), length)

    def support(self, query, mask, step):
        position = self.predict_position(query, mask, step)[:, None]  # batch x 1
        source_positions = ops.cast(ops.arange(ops.shape(mask)[1]), "float32")[None, :]
        distance = source_positions - position  # batch x src_len
        in_window = ops.logical_and(mask, ops.abs(distance) <= float(self.window))
        sigma = self.window / 2.0
        gaussian = ops.exp(-ops.square(distance) / (2.0 * sigma * sigma))
        return in_window, gaussian

    def get_config(self):
        config = super().get_config()
        config.update({"mode": self.mode, "window": self.window})
        return config
