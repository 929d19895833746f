"""The beam step's ranking: the k best (beam, word) expansions without a full top-k pass.

Each beam step ranks ``alive_log_probs[b, i] + log_probs[b, i, v]`` over the K·V pairs of a
sentence and keeps the best k = 2K. A `top_k` over (B, K·V) is the search's most expensive
bookkeeping op on CPU (5–11 ms of a 40–50 ms step for 64 sentences × 5 beams × 7.9k words,
more than the vocabulary softmax), and adding the beam scores first costs another full pass.
Here each beam's vocabulary row is cut into chunks of c words: the k best pairs lie in the
k chunks with the largest maxima (any chunk holding one of them has a maximum at least that
large, and a chunk with an equal maximum and a lower index holds an element that ranks
first), so a max over the chunks, a top-k over the K·V/c chunk maxima plus beam scores, and a
top-k over the k·c gathered words give exactly `top_k`'s values and indices. Ties keep the
lower flat index first where the backend's `top_k` does (TensorFlow, JAX); `torch.topk`
orders ties arbitrarily, and so does this function under PyTorch. `expand_beams` adds beam
search's length limit: a sentence at its limit may only emit </s>, a rule applied to the k
candidates rather than to the (B, K, V) log-probabilities.
"""

import functools
import math

from keras import ops

from keras_rnmt.search._decoding import NEG_INF

# Chunks narrower than this save too little to be worth the extra ops.
MIN_CHUNK = 8


@functools.cache  # eager PyTorch calls it at every beam step
def chunk_width(vocab_size):
    """A divisor c of ``vocab_size`` near sqrt(V) (so both top-ks are small), or None.

    Only divisors within a factor 4 of sqrt(V) and at least `MIN_CHUNK` are used: padding
    the vocabulary axis to a multiple would cost the full copy the chunks save.
    """
    root = math.sqrt(vocab_size)
    divisors = [c for c in range(MIN_CHUNK, vocab_size) if vocab_size % c == 0
                and root / 4 <= c <= root * 4]
    if not divisors:
        return None
    return min(divisors, key=lambda c: abs(math.log(c / root)))


def beam_top_k(alive_log_probs, log_probs, k):
    """The k best expansions of every sentence's beams, as ``top_k`` over the flat pairs.

    Args:
        alive_log_probs: float32 (B, K), the beams' log-probabilities (-inf: empty beam).
        log_probs: float32 (B, K, V), the next word's log-probabilities per beam, V static.
        k: int, at most K·V.

    Returns:
        ``(scores, index)``: float32 (B, k) sorted best first, equal to
        ``top_k(reshape(alive_log_probs[:, :, None] + log_probs, (B, K·V)), k)``'s values,
        and int32 (B, k) flat indices ``beam·V + word``, the same as ``top_k``'s wherever
        the scores are distinct (on ties, see the module docstring).
    """
    batch, beams, vocab_size = ops.shape(log_probs)
    chunk = chunk_width(vocab_size)
    chunks = vocab_size // chunk if chunk else 0
    if chunk is None or beams * chunks < k:
        scores = ops.reshape(alive_log_probs[:, :, None] + log_probs, (batch, -1))
        top_scores, index = ops.top_k(scores, k=k, sorted=True)
        return top_scores, ops.cast(index, "int32")
    pieces = ops.reshape(log_probs, (batch, beams * chunks, chunk))  # B x KN x c
    maxima = ops.reshape(ops.max(pieces, axis=-1), (batch, beams, chunks))
    # fl(a + x) is monotonic in x, so this orders the chunks as their summed elements would.
    maxima = ops.reshape(maxima + alive_log_probs[:, :, None], (batch, beams * chunks))
    _, best_chunks = ops.top_k(maxima, k=k, sorted=True)
    # In index order, so the final top-k breaks ties by flat index as a full top-k would.
    best_chunks = ops.sort(ops.cast(best_chunks, "int32"), axis=-1)  # B x k
    beam = best_chunks // chunks
    words = ops.take_along_axis(pieces, best_chunks[:, :, None], axis=1)  # B x k x c
    words = words + ops.take_along_axis(alive_log_probs, beam, axis=1)[:, :, None]
    top_scores, position = ops.top_k(ops.reshape(words, (batch, k * chunk)), k=k, sorted=True)
    position = ops.cast(position, "int32")
    flat_chunk = ops.take_along_axis(best_chunks, position // chunk, axis=1)
    index = (flat_chunk // chunks) * vocab_size + (flat_chunk % chunks) * chunk + position % chunk
    return top_scores, index


def expand_beams(alive_log_probs, log_probs, at_limit, eos_id, k):
    """The k best one-word expansions of every sentence's beams (one beam step's ranking).

    Args:
        alive_log_probs: float32 (B, K), the beams' log-probabilities (-inf: empty beam).
        log_probs: float32 (B, K, V), the next word's log-probabilities.
        at_limit: bool (B,), sentences at their length limit: they may only emit </s>, so
            their candidates are their beams' </s> expansions, best first, then empty
            (-inf) slots.
        eos_id: int, the </s> id.
        k: int in [K, K·V].

    Returns:
        ``(log_probs, index)``: float32 (B, k) best first, int32 (B, k) flat indices
        ``beam·V + word``.
    """
    batch_size, beam_size, vocab_size = ops.shape(log_probs)
    candidate_log_probs, flat_index = beam_top_k(alive_log_probs, log_probs, k)
    eos_log_probs, eos_beam = ops.top_k(alive_log_probs + log_probs[:, :, eos_id],
                                        k=beam_size, sorted=True)  # B x K
    empty = k - beam_size
    eos_log_probs = ops.concatenate(
        [eos_log_probs, ops.full((batch_size, empty), NEG_INF, dtype="float32")], axis=1)
    eos_index = ops.concatenate(
        [ops.cast(eos_beam, "int32") * vocab_size + eos_id,
         ops.zeros((batch_size, empty), dtype="int32")], axis=1)
    at_limit = at_limit[:, None]
    return (ops.where(at_limit, eos_log_probs, candidate_log_probs),
            ops.where(at_limit, eos_index, flat_index))
