"""Beam search over a batch that sheds its finished sentences as it goes.

`beam_search` runs one loop until the batch's last sentence is done, so a sentence that
finished at step 8 still costs its K rows of step function at every later step. Here the
loop runs in chunks of `chunk_steps`; between chunks the host reads which sentences are
still alive and, once at most half of the rows are, keeps only those
(`select_sentences`), padded to a power of two (at least `min_rows`) so that compiled
backends see a few batch sizes only. The hypotheses are those of `beam_search`: every
sentence runs the same steps from the same state; only the rows around it change.
`graph_shrinking.py` runs the same chunks inside one TensorFlow graph.
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
