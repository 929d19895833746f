"""Beam search over a batch that sheds its finished sentences as it goes.

`beam_search` runs one loop until the batch's last sentence is done, so a sentence that
finished at step 8 still costs its K rows of step function at every later step. Here the
loop runs in chunks of `chunk_steps`; between chunks the host reads which sentences are
still alive and, once at most half of the rows are, keeps only those
(`select_sentences`), padded to a power of two (at least `min_rows`) so that compiled
backends see a few batch sizes only. The hypotheses are those of `beam_search`: every
sentence runs the same steps from the same state; only the rows around it change.
"""

import numpy as np
from keras import ops, tree

from keras_rnmt.search._decoding import NEG_INF
from keras_rnmt.search.beam import beam_search_result
from keras_rnmt.search.beam_step import BeamState


def shrinking_beam_search(start, advance, beam_size, chunk_steps=4, min_rows=8):
    """Drive a compiled beam search chunk by chunk and return its numpy results.

    Args:
        start: callable `() -> BeamState` (`beam_search_start` of the batch).
        advance: callable `(carry, until) -> BeamState` (`beam_search_continue` up to step
            `until`, an int32 scalar).
        beam_size: int, K.
        chunk_steps: int. Steps between two looks at the batch. Defaults to 4.
        min_rows: int. Smallest batch the search shrinks to. Defaults to 8.

    Returns:
        `(tokens (B, N, T), scores (B, N), attention (B, N, T, S) or None)` numpy arrays in
        the batch's order.
    """
    carry = start()
    batch = int(ops.shape(carry.alive_log_probs)[0])
    steps = int(ops.shape(carry.alive_tokens)[-1])
    rows = np.arange(batch)  # the batch row of every carry row; -1 for padding rows
    outputs = None
    until = 0
    while True:
        until = min(until + chunk_steps, steps)
        carry = advance(carry, np.int32(until))
        alive = np.any(ops.convert_to_numpy(carry.alive_log_probs) > NEG_INF, axis=1)
        alive &= rows >= 0
        done = not alive.any() or until >= steps
        if not done and alive.sum() * 2 > len(rows):
            continue
        finished = np.ones_like(alive) if done else ~alive
        outputs = _collect(carry, rows, finished, outputs, batch)
        if done:
            return outputs
        keep = np.flatnonzero(alive)
        size = max(min_rows, 1 << int(len(keep) - 1).bit_length())
        if size < len(rows):
            # Pad with copies of a kept row; their results are ignored.
            padded = np.concatenate([keep, np.full(size - len(keep), keep[0])])
            carry = select_sentences(carry, ops.convert_to_tensor(padded, "int32"), beam_size)
            rows = np.concatenate([rows[keep], np.full(size - len(keep), -1)])


def _collect(carry, rows, take, outputs, batch):
    """Copy the results of carry rows `take` into the (B, ...) output arrays."""
    result = beam_search_result(carry)
    fields = [None if f is None else ops.convert_to_numpy(f)
              for f in (result.tokens, result.scores, result.attention)]
    if outputs is None:
        outputs = [None if f is None else np.zeros((batch,) + f.shape[1:], f.dtype)
                   for f in fields]
    where = np.flatnonzero(take & (rows >= 0))
    for out, field in zip(outputs, fields):
        if out is not None:
            out[rows[where]] = field[where]
    return outputs


def select_sentences(carry, rows, beam_size):
    """Keep sentences ``rows`` (int32 (B',)) of a `BeamState`, in that order.

    Sentence-major fields are gathered on their first axis, the model state's (B * K, ...)
    leaves on their sentence's K rows; ``step`` is shared.
    """
    rows = ops.cast(rows, "int32")
    beam_rows = ops.reshape(rows[:, None] * beam_size + ops.arange(beam_size, dtype="int32"),
                            (-1,))
    fields = {name: ops.take(value, rows, axis=0)
              for name, value in carry._asdict().items() if name not in ("step", "model_state")}
    model_state = tree.map_structure(lambda x: ops.take(x, beam_rows, axis=0), carry.model_state)
    return BeamState(step=carry.step, model_state=model_state, **fields)


def graph_shrinking_beam_search(start, advance, beam_size, chunk_steps=4):
    """`shrinking_beam_search` inside one TensorFlow graph (what the SavedModel runs).

    A `tf.while_loop` over chunks of `chunk_steps` beam steps; after each chunk every
    sentence's best finished hypothesis is copied to the outputs and, once at most half of
    the rows are alive, only the alive sentences are kept. The carry's batch axis is
    left unknown (`shape_invariants`), so no padding is needed: TensorFlow kernels take
    any batch size without recompiling. TensorFlow only (eager or `tf.function`).

    Args:
        start: callable `() -> BeamState` (`beam_search_start` of the batch).
        advance: callable `(carry, until) -> BeamState` (`beam_search_continue` up to step
            `until`, an int32 scalar tensor).
        beam_size: int, K.
        chunk_steps: int. Steps between two looks at the batch. Defaults to 4.

    Returns:
        `(tokens int32 (B, T), scores float32 (B,))`: the best hypothesis of every sentence,
        as `beam_search(...).tokens[:, 0]` and `.scores[:, 0]`.
    """
    import tensorflow as tf

    carry = start()
    batch = tf.shape(carry.alive_log_probs)[0]
    steps = carry.alive_tokens.shape[-1]
    tokens = tf.zeros([batch, steps], tf.int32)
    scores = tf.zeros([batch], tf.float32)
    rows = tf.range(batch)  # the batch row of every carry row

    def alive_of(carry):
        return tf.reduce_any(carry.alive_log_probs > NEG_INF, axis=1)

    def cond(carry, rows, tokens, scores):
        return tf.logical_and(carry.step < steps, tf.reduce_any(alive_of(carry)))

    def body(carry, rows, tokens, scores):
        carry = advance(carry, carry.step + chunk_steps)
        index = rows[:, None]
        tokens = tf.tensor_scatter_nd_update(tokens, index, carry.finished_tokens[:, 0])
        scores = tf.tensor_scatter_nd_update(scores, index, carry.finished_scores[:, 0])
        alive = alive_of(carry)
        keep = tf.cast(tf.where(alive)[:, 0], tf.int32)

        def shed():
            return select_sentences(carry, keep, beam_size), tf.gather(rows, keep)

        carry, rows = tf.cond(2 * tf.size(keep) <= tf.size(rows), shed, lambda: (carry, rows))
        return carry, rows, tokens, scores

    def any_batch(x):
        x = tf.convert_to_tensor(x)
        return tf.TensorShape([None] + x.shape[1:]) if x.shape.rank else x.shape

    loop_vars = (carry, rows, tokens, scores)
    invariants = tf.nest.map_structure(any_batch, loop_vars)  # the step stays a scalar
    _, _, tokens, scores = tf.while_loop(cond, body, loop_vars, shape_invariants=invariants)
    return tokens, scores
