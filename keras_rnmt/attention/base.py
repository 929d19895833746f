"""The attention template: masking, float32 softmax, context read-out; variants write the score."""

import keras
from keras import ops

from keras_rnmt.attention.checks import check_positive_int
from keras_rnmt.direct_call import calls_directly
from keras_rnmt.matmul_precision import matmul as precision_matmul
from keras_rnmt.matmul_precision import matmul_precision


def large_negative(dtype):
    """The score given to masked positions: the most negative number `dtype` can hold safely.

    -65504 (the float16 minimum) for float16, -1e9 otherwise; never -inf, which would turn a
    fully masked row into NaN.
    """
    return -65504.0 if keras.backend.standardize_dtype(dtype) == "float16" else -1e9


class MatrixDense(keras.layers.Dense):
    """`keras.layers.Dense` that applies its kernel to a `(..., d)` input as one 2-D matmul.

    `(B, S, d)` -> reshape `(B*S, d)` -> matmul -> reshape `(B, S, units)`: the same numbers as
    `Dense`, and the same variables (a `.keras` file written with `Dense` sublayers loads). The
    reason is XLA under TensorFlow: `Dense` multiplies a rank-3 input with `tf.tensordot`, whose
    gradient inside the decoder's `while_loop` needs a transpose permutation that XLA cannot
    fold when the batch and source length are dynamic, so `fit(jit_compile=True)` on a
    `tf.data` pipeline failed to compile (and Keras' `jit_compile="auto"` picks XLA on a GPU).
    Under `matmul_precision("bfloat16")` (JAX) the product takes bfloat16 operands and
    float32 sums (`keras_rnmt.matmul_precision`).
    """

    def __call__(self, inputs, *args, **kwargs):
        # Eager PyTorch: the step's projections skip Keras' call wrapper where it would
        # change nothing (keras_rnmt/direct_call.py).
        if not args and not kwargs and calls_directly(self, inputs):
            return self.call(inputs)
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs, training=None):
        if len(inputs.shape) <= 2:
            return self._call_2d(inputs, training)
        shape = ops.shape(inputs)
        flat = ops.reshape(inputs, (-1, shape[-1]))
        outputs = self._call_2d(flat, training)
        return ops.reshape(outputs, (*shape[:-1], self.units))

    def _call_2d(self, inputs, training):
        if matmul_precision() == "float32" or self.quantization_mode or self.lora_enabled:
            return super().call(inputs, training=training)
        outputs = precision_matmul(inputs, self.kernel)
        if self.use_bias:
            outputs = ops.add(outputs, self.bias)
        return self.activation(outputs) if self.activation is not None else outputs


@keras.saving.register_keras_serializable(package="keras_rnmt")
class BaseAttention(keras.layers.Layer):
    """Base class of every attention in keras-rnmt: one decoder step of alignment and read-out.

    The base class owns everything but the score. For a decoder state `s_j` (the query) and the
    encoder annotations `h_i` (the memory) one call computes (Yang et al. Eq. 5-7):

        e_ij = score(s_j, h_i)                      # written by the variant
        alpha_ij = softmax_i(e_ij) over real tokens  # here, in float32
        c_j = sum_i alpha_ij h_i                     # here, in the compute dtype

    Masked positions get the score `large_negative(compute dtype)` (-65504 for float16, -1e9
    otherwise, never -inf) before a float32 softmax, and the weights are multiplied by the mask
    afterwards, so they are exactly 0 on pads (and all 0 on a row with no real token).

    A variant overrides `build()` (sublayers with `dtype=self.dtype_policy` and explicit
    names), `score()`, and where needed these hooks, called in this order by `call()`:

    1. `advance_state(query, keys, mask, state)`: the state transition that happens *before*
       scoring (e.g. the dynamic memory LSTM of `RecurrentAttention`, Yang et al. Eq. 10).
    2. `score(query, keys, mask, state, step)`: the energies `e_ij`, shape `(B, S)`.
    3. `support(query, mask, step)`: the positions the softmax runs over and an optional
       float32 prior multiplied into the weights after the softmax (e.g. Luong's local window
       and Gaussian). Default: the mask, no prior. Weights are 0 outside the support.
    4. `update_state(weights, query, keys, mask, state)`: the state transition that uses this
       step's weights (e.g. coverage accumulation). Default: the state unchanged.

    Everything that depends only on the memory is computed once per sentence by `prepare()`
    and handed back to every `call()` as `keys`. Keys and state tensors are batch-major
    (`(B, S, ...)`, `(B, ...)`), so beam search can tile them along axis 0 and reorder them
    with a gather on axis 0.

    Dtypes: `query`, `memory` and `context` are in the compute dtype of the layer's dtype
    policy; `weights` and every state tensor are float32 under every policy (so a loop carry
    keeps one dtype across steps). The layer does not autocast its inputs implicitly; it casts
    them explicitly, and its sublayers follow the policy (variables float32 under
    "mixed_float16" / "mixed_bfloat16").

    Call `build(query_shape, memory_shape)` before `prepare()` / `initial_state()` (a decoder
    does it in its own `build()`); a layer restored by `deserialize_keras_object` / a `.keras`
    file arrives built, so guard with `if not layer.built`.

    Args:
        units: int or None. Size of the hidden layer of the score, where the variant has one.
            Defaults to `None`.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, `dtype`, `trainable`).

    Call arguments:
        query: tensor `(B, Dq)`, the decoder state `s_j`.
        memory: tensor `(B, S, Dm)`, the encoder annotations `h_i`.
        keys: what `prepare(memory, mask)` returned for this batch.
        mask: bool tensor `(B, S)`, True on real tokens; `None` means all real.
        state: tuple from `initial_state()` or from the previous call; `()` if stateless.
        step: int scalar (possibly a traced tensor), the 0-based target position `j`. Only
            `LocalAttention(mode="monotonic")` needs it.
        training: bool, unused by the current variants (no dropout), kept for decoders.

    Returns:
        `(context, weights, new_state)`: context `(B, Dm)` in the compute dtype, weights
        `(B, S)` float32, new_state a tuple shaped like `state`.

    Example:

    ```python
    import numpy as np
    from keras_rnmt.attention import LuongAttention

    attention = LuongAttention(score="dot")
    query = np.random.rand(4, 6).astype("float32")  # batch x query_dim
    memory = np.random.rand(4, 20, 6).astype("float32")  # batch x src_len x memory_dim
    mask = np.arange(20) < np.array([[20], [1], [2], [7]])  # real lengths 20, 1, 2, 7
    attention.build(query.shape, memory.shape)
    keys = attention.prepare(memory, mask)
    state = attention.initial_state(memory, mask)
    context, weights, state = attention(query, memory, keys, mask=mask, state=state)
    ```

    References:
        - [Bahdanau et al., 2015](https://arxiv.org/abs/1409.0473)
        - [Yang et al., 2017](https://arxiv.org/abs/1609.05284), Eq. 5-7.
    """

    def __init__(self, units=None, **kwargs):
        super().__init__(**kwargs)
        self.units = check_positive_int(type(self).__name__, "units", units, allow_none=True)
        # Inputs are cast explicitly in `call()`: the float32 state must not be rounded to the
        # compute dtype on the way in. Sublayers still autocast under mixed precision.
        self.autocast = False
        # The mask is consumed here: the outputs have no source axis left to mask.
        self.supports_masking = True

    def build(self, query_shape, memory_shape):
        self.query_dim = int(query_shape[-1])
        self.memory_dim = int(memory_shape[-1])

    # ------------------------------------------------------------------ per sentence
    def prepare(self, memory, mask=None):
        """Memory-side projections, computed once per sentence.

        Args:
            memory: tensor `(B, S, Dm)`.
            mask: bool tensor `(B, S)` or `None`.

        Returns:
            `keys`: a tensor or tuple of batch-major tensors `(B, S, ...)`. Default: the memory
            in the compute dtype.
        """
        self._check_built("prepare")
        return ops.cast(memory, self.compute_dtype)

    def initial_state(self, memory, mask=None):
        """The attention state before the first target word: a tuple of float32 `(B, ...)`.

        Default: `()` (stateless).
        """
        self._check_built("initial_state")
        return ()

    # ------------------------------------------------------------------ hooks
    def score(self, query, keys, mask, state, step):
        """The energies `e_ij`, shape `(B, S)` in the compute dtype. Written by each variant."""
        raise NotImplementedError(f"{type(self).__name__} must implement `score()`.")

    def advance_state(self, query, keys, mask, state):
        """State transition before scoring. Default: unchanged."""
        return state

    def support(self, query, mask, step):
        """`(support, prior)`: bool `(B, S)` positions the softmax runs over, and a float32
        `(B, S)` factor applied after the softmax or `None`. Default: `(mask, None)`."""
        return mask, None

    def update_state(self, weights, query, keys, mask, state):
        """State transition with this step's float32 `weights` `(B, S)`. Default: unchanged."""
        return state

    # ------------------------------------------------------------------ template
    def call(self, query, memory, keys, mask=None, state=(), step=None, training=False):
        query = ops.cast(query, self.compute_dtype)  # batch x query_dim
        memory = ops.cast(memory, self.compute_dtype)  # batch x src_len x memory_dim
        mask = self.standardize_mask(mask, memory)  # batch x src_len, bool
        state = tuple(ops.cast(tensor, "float32") for tensor in state)

        state = self.advance_state(query, keys, mask, state)
        energies = self.score(query, keys, mask, state, step)  # batch x src_len
        support, prior = self.support(query, mask, step)
        weights = masked_softmax(energies, support, self.compute_dtype)
        if prior is not None:
            weights = weights * prior
        weights = weights * ops.cast(support, "float32")  # exactly 0 outside the support

        context = ops.einsum("bs,bsd->bd", ops.cast(weights, self.compute_dtype), memory)
        new_state = self.update_state(weights, query, keys, mask, state)
        new_state = tuple(ops.cast(tensor, "float32") for tensor in new_state)
        return context, weights, new_state

    def compute_mask(self, inputs, previous_mask):
        return None

    def standardize_mask(self, mask, memory):
        """A bool `(B, S)` mask; `None` becomes all True."""
        if mask is None:
            return ops.ones_like(memory[..., 0], dtype="bool")
        return ops.cast(mask, "bool")

    def _dense(self, units, name, input_shape, use_bias=False):
        """A built `MatrixDense` sublayer that follows this layer's dtype policy."""
        layer = MatrixDense(units, use_bias=use_bias, dtype=self.dtype_policy, name=name)
        layer.build(input_shape)
        return layer

    def _check_built(self, method):
        if not self.built:
            raise ValueError(
                f"{type(self).__name__} '{self.name}' is not built: call "
                f"`build(query_shape, memory_shape)` before `{method}()`."
            )

    def get_config(self):
        config = super().get_config()
        config.update({"units": self.units})
        return config


def masked_softmax(energies, mask, compute_dtype):
    """Softmax over the last axis in float32, with masked energies replaced by a large negative.

    Args:
        energies: tensor `(B, S)`.
        mask: bool tensor `(B, S)`.
        compute_dtype: the dtype the energies were computed in; picks the masking value.

    Returns:
        float32 tensor `(B, S)`. Masked positions are ~0 here; callers multiply by the mask.
    """
    energies = ops.cast(energies, "float32")
    energies = ops.where(mask, energies, large_negative(compute_dtype))
    return ops.softmax(energies, axis=-1)
