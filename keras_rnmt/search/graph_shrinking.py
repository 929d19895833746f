"""Beam search that sheds its finished sentences inside one TensorFlow graph.

`shrinking.shrinking_beam_search` drives the chunks of a beam search from Python: one
compiled call every few steps, a look at the host in between, and a batch padded to a
power of two so that compiled backends see few shapes. TensorFlow's kernels take any batch
size without recompiling, so under TensorFlow (without XLA) the whole search can run as one
`tf.while_loop` over chunks whose carry has an unknown batch axis: no host round trip, no
padding rows, sentences shed as soon as half of the rows are done. The SavedModel serves
this loop, and `Translator` runs it under TensorFlow. The hypotheses are `beam_search`'s:
every sentence runs the same steps from the same state; only the rows around it change.
"""

from keras_rnmt.search._decoding import NEG_INF
from keras_rnmt.search.beam import beam_search_result
from keras_rnmt.search.result import SearchResult
from keras_rnmt.search.shrinking import select_sentences


def graph_shrinking_beam_search(start, advance, beam_size, chunk_steps=4):
    """`beam_search`'s result, computed in chunks that drop the sentences already done.

    A `tf.while_loop` over chunks of `chunk_steps` beam steps; after each chunk the finished
    pool of every sentence still in the carry is copied to the outputs (a sentence's pool
    no longer changes once it is done) and, once at most half of the rows are alive, only
    the alive sentences are kept. TensorFlow only (eager or inside `tf.function`, not XLA).

    Args:
        start: callable `() -> BeamState` (`beam_search_start` of the batch).
        advance: callable `(carry, until) -> BeamState` (`beam_search_continue` up to step
            `until`, an int32 scalar tensor).
        beam_size: int, K.
        chunk_steps: int. Steps between two looks at the batch. Defaults to 4.

    Returns:
        A `SearchResult` as `beam_search` returns it: tokens int32 (B, N, T), scores and
        log_probs float32 (B, N), lengths int32 (B, N), attention float32 (B, N, T, S) or
        ``None`` (no attention, or ``keep_attention=False``).
    """
    import tensorflow as tf

    carry = start()
    steps = carry.alive_tokens.shape[-1]
    outputs = _fields(beam_search_result(carry))
    rows = tf.range(tf.shape(carry.alive_log_probs)[0])  # the batch row of every carry row

    def alive_of(carry):
        return tf.reduce_any(carry.alive_log_probs > NEG_INF, axis=1)

    def cond(carry, rows, outputs):
        return tf.logical_and(carry.step < steps, tf.reduce_any(alive_of(carry)))

    def body(carry, rows, outputs):
        carry = advance(carry, carry.step + chunk_steps)
        index = rows[:, None]
        outputs = [tf.tensor_scatter_nd_update(out, index, field)
                   for out, field in zip(outputs, _fields(beam_search_result(carry)))]
        keep = tf.cast(tf.where(alive_of(carry))[:, 0], tf.int32)

        def shed():
            return select_sentences(carry, keep, beam_size), tf.gather(rows, keep)

        carry, rows = tf.cond(2 * tf.size(keep) <= tf.size(rows), shed, lambda: (carry, rows))
        return carry, rows, outputs

    def any_batch(x):
        x = tf.convert_to_tensor(x)
        return tf.TensorShape([None] + x.shape[1:]) if x.shape.rank else x.shape

    invariants = tf.nest.map_structure(any_batch, (carry, rows))  # the step stays a scalar
    invariants += ([tf.TensorShape(x.shape) for x in outputs],)  # the outputs keep B rows
    _, _, outputs = tf.while_loop(cond, body, (carry, rows, outputs),
                                  shape_invariants=invariants)
    has_attention = len(outputs) == 5
    return SearchResult(*outputs[:4], attention=outputs[4] if has_attention else None)


def _fields(result):
    """The tensors of a `SearchResult`, attention last where there is one."""
    fields = [result.tokens, result.scores, result.log_probs, result.lengths]
    return fields + ([] if result.attention is None else [result.attention])
