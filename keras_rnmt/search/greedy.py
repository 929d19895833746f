"""Greedy decoding: feed back the most probable token until every sentence emits </s>."""

from typing import Any, NamedTuple

from keras import ops

from keras_rnmt.search._decoding import (
    call_step,
    read_step,
    resolve_max_length,
    write_step,
)
from keras_rnmt.search.result import SearchResult


class GreedyState(NamedTuple):
    """The ``while_loop`` carry of `greedy_search` (B sentences, T steps, S source words).

    Attributes:
        step: int32 scalar. Number of tokens emitted so far (the next position to write).
        tokens: int32 (B, T). Emitted ids, 0 after </s>.
        log_probs: float32 (B,). Sum of the emitted tokens' log-probabilities.
        lengths: int32 (B,). Tokens emitted so far, </s> included.
        finished: bool (B,). True once the sentence emitted </s>.
        attention: float32 (B, T, S). Attention of each step (zeros after </s>).
        model_state: the step function's state, leaves (B, ...).
    """

    step: Any
    tokens: Any
    log_probs: Any
    lengths: Any
    finished: Any
    attention: Any
    model_state: Any


def _advance(carry, log_probs, model_state, attention, limits, eos_id):
    """Append the argmax token of step ``carry.step``; finished sentences append padding."""
    t = carry.step
    tokens = ops.cast(ops.argmax(log_probs, axis=-1), "int32")
    tokens = ops.where(t >= limits - 1, eos_id, tokens)  # sentence reached its length limit
    token_log_probs = ops.take_along_axis(log_probs, tokens[:, None], axis=-1)[:, 0]
    active = ops.logical_not(carry.finished)
    tokens = ops.where(active, tokens, 0)
    attention = ops.where(active[:, None], attention, 0.0)
    return GreedyState(
        step=t + 1,
        tokens=write_step(carry.tokens, t, tokens, axis=1),
        log_probs=carry.log_probs + ops.where(active, token_log_probs, 0.0),
        lengths=carry.lengths + ops.cast(active, "int32"),
        finished=ops.logical_or(carry.finished, ops.logical_and(active, tokens == eos_id)),
        attention=write_step(carry.attention, t, attention, axis=1),
        model_state=model_state,
    )


def greedy_search(
    step_fn,
    initial_state,
    *,
    batch_size,
    bos_id,
    eos_id,
    max_length,
    source_mask=None,
    max_steps=None,
):
    """Decode by taking the most probable token at every step.

    The loop is `keras.ops.while_loop`; it stops when every sentence has emitted </s> or
    after T steps. A sentence that reaches its own limit gets </s> forced (its score then
    includes the model's log-probability of that </s>). Beam search with ``beam_size=1``
    returns exactly the same tokens and scores.

    Args:
        step_fn: callable ``(tokens, state) -> (log_probs, new_state, attention)``:
            tokens int32 (B,), the previous ids (``bos_id`` first); state any nested
            structure of batch-major tensors (B, ...); log_probs float32 (B, V) normalised;
            new_state with the structure, shapes and dtypes of ``state``; attention float32
            (B, S) or ``None``.
        initial_state: the state before the first step, leaves (B, ...).
        batch_size: int. B.
        bos_id: int. Id fed at the first step.
        eos_id: int. End-of-sentence id.
        max_length: int, or int tensor (B,) of per-sentence limits, counting </s>.
        source_mask: accepted for signature parity with `beam_search` (where it masks the
            coverage penalty); greedy search has no penalty and does not use it.
        max_steps: optional int, the static output length T; needed only when
            ``max_length`` is a tensor traced by ``jax.jit``/``tf.function``.

    Returns:
        `SearchResult` with tokens (B, T), scores = log_probs (B,), lengths (B,) and
        attention (B, T, S) or ``None``.

    Example:
    >>> import numpy as np
    >>> # log P(next | previous) over <pad>, <s>, </s>, a: <s> -> a .6 | </s> .4;
    >>> # a -> </s> .9 | a .1 (pad and </s> rows are never used).
    >>> probs = np.array([[1, 0, 0, 0], [0, 0, .4, .6], [1, 0, 0, 0], [0, 0, .9, .1]])
    >>> table = np.log(probs + 1e-9)
    >>> step = lambda tokens, state: (ops.take(table, tokens, axis=0), state, None)
    >>> result = greedy_search(step, {}, batch_size=1, bos_id=1, eos_id=2, max_length=4)
    >>> ops.convert_to_numpy(result.tokens).tolist()
    [[3, 2, 0, 0]]
    """
    del source_mask  # see Args
    limits, steps = resolve_max_length(max_length, batch_size, max_steps)
    # The first step runs before the loop: its attention gives the buffers' S.
    bos = ops.full((batch_size,), bos_id, dtype="int32")
    log_probs, model_state, attention, has_attention = call_step(step_fn, bos, initial_state)
    carry = GreedyState(
        step=ops.convert_to_tensor(0, dtype="int32"),
        tokens=ops.zeros((batch_size, steps), dtype="int32"),
        log_probs=ops.zeros((batch_size,), dtype="float32"),
        lengths=ops.zeros((batch_size,), dtype="int32"),
        finished=ops.zeros((batch_size,), dtype="bool"),
        attention=ops.zeros((batch_size, steps, ops.shape(attention)[-1]), dtype="float32"),
        model_state=model_state,
    )
    carry = _advance(carry, log_probs, model_state, attention, limits, eos_id)

    def cond(carry):
        return ops.logical_and(carry.step < steps, ops.logical_not(ops.all(carry.finished)))

    def body(carry):
        previous = read_step(carry.tokens, carry.step - 1)
        log_probs, model_state, attention, _ = call_step(
            step_fn, previous, carry.model_state, expect_attention=has_attention
        )
        return (_advance(carry, log_probs, model_state, attention, limits, eos_id),)

    (carry,) = ops.while_loop(cond, body, (carry,))
    return SearchResult(
        tokens=carry.tokens,
        scores=carry.log_probs,
        log_probs=carry.log_probs,
        lengths=carry.lengths,
        attention=carry.attention if has_attention else None,
    )
