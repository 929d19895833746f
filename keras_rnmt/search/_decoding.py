"""Pieces shared by greedy and beam search: the step-function call, length limits, buffers.

Output buffers have a static time length T so the loop carry keeps one shape under
``tf.function``/XLA and ``jax.jit``; step ``t`` is written with a one-hot mask over T.
"""

import numbers

import numpy as np
from keras import ops

NEG_INF = float("-inf")


def resolve_max_length(max_length, batch_size, max_steps=None):
    """Per-sentence length limits and the static buffer length.

    Args:
        max_length: int, or int tensor (batch_size,): most tokens (including </s>) a
            sentence may get, e.g. ``a * |source| + b`` computed by the caller.
        batch_size: int.
        max_steps: optional int, the buffer length T. Defaults to ``max_length`` (int) or to
            the largest entry of the tensor, which needs a concrete tensor: inside
            ``jax.jit`` or ``tf.function`` pass it explicitly.

    Returns:
        ``(limits, T)``: int32 tensor (batch_size,) with entries clipped to ``[1, T]``, and T.
    """
    if isinstance(max_length, numbers.Integral):
        if max_length < 1:
            raise ValueError(f"max_length must be >= 1; received max_length={max_length}")
        steps = int(max_length) if max_steps is None else int(max_steps)
        limits = ops.full((batch_size,), int(max_length), dtype="int32")
    else:
        limits = ops.cast(max_length, "int32")
        if max_steps is None and isinstance(max_length, (np.ndarray, list, tuple)):
            steps = int(np.max(max_length))
        elif max_steps is None:
            try:
                steps = int(ops.convert_to_numpy(ops.max(limits)))
            except Exception as error:  # symbolic tensor: jit/graph tracing
                raise ValueError(
                    "max_length is a symbolic tensor (inside jax.jit or tf.function); pass "
                    "max_steps=<int> as the static upper bound on the output length"
                ) from error
        else:
            steps = int(max_steps)
    if steps < 1:
        raise ValueError(f"max_steps must be >= 1; received max_steps={steps}")
    return ops.clip(limits, 1, steps), steps


def call_step(step_fn, tokens, state, expect_attention=None):
    """Call the model callback and normalise its outputs.

    Returns:
        ``(log_probs, new_state, attention, has_attention)``: log_probs float32 (N, V);
        attention float32 (N, S), or an (N, 0) placeholder when the model gives ``None``.
    """
    log_probs, new_state, attention = step_fn(tokens, state)
    has_attention = attention is not None
    if expect_attention is not None and has_attention != expect_attention:
        raise ValueError(
            "step_fn must return attention on every step or on none; it changed between steps"
        )
    if has_attention:
        attention = ops.cast(attention, "float32")
    else:
        attention = ops.zeros((ops.shape(log_probs)[0], 0), dtype="float32")
    return ops.cast(log_probs, "float32"), new_state, attention, has_attention


def read_step(buffer, t):
    """``buffer[..., t]`` for an int buffer (..., T) and a scalar tensor ``t``."""
    steps = ops.shape(buffer)[-1]
    hit = ops.arange(steps, dtype="int32") == t
    picked = ops.sum(ops.where(hit, buffer, ops.zeros_like(buffer)), axis=-1)
    return ops.cast(picked, buffer.dtype)  # torch sums int32 to int64


def write_step(buffer, t, values, axis):
    """Return ``buffer`` with ``buffer[..., t, ...] = values`` along time axis ``axis``.

    Args:
        buffer: tensor (..., T, *rest) whose time axis is ``axis`` (non-negative).
        t: scalar int tensor.
        values: tensor shaped like ``buffer`` without the time axis.
    """
    shape = ops.shape(buffer)
    trailing = len(shape) - axis - 1
    hit = ops.arange(shape[axis], dtype="int32") == t
    hit = ops.reshape(hit, (shape[axis],) + (1,) * trailing)
    values = ops.cast(ops.expand_dims(values, axis=axis), buffer.dtype)
    return ops.where(hit, values, buffer)
