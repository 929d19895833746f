"""One step of batched beam search: the `BeamState` carry and the bookkeeping that advances it.

`beam.py` describes the alive/finished formulation and runs the loop; this module holds what
happens at each step once the model has scored the alive beams: expand them to the top 2K
candidates, refill *alive*, merge the </s> candidates into *finished*, retire the sentences
that are done. Plain ``keras.ops``: it runs eagerly, in ``tf.function``/XLA, ``jax.jit`` and
PyTorch alike.
"""

from typing import Any, NamedTuple

from keras import ops

from keras_rnmt.search import beam_helpers
from keras_rnmt.search._decoding import NEG_INF, write_step
from keras_rnmt.search.beam_helpers import gather_beams, take_beams, unflatten_beam_dim
from keras_rnmt.search.top_k import expand_beams


class BeamState(NamedTuple):
    """The ``while_loop`` carry of `beam_search`.

    B sentences, K = beam_size, N = n_best, T steps, S source positions (0 when the model
    gives no attention).

    Attributes:
        step: int32 scalar. Tokens emitted so far by the alive beams (next position).
        alive_tokens: int32 (B, K, T). Ids of the alive hypotheses.
        alive_log_probs: float32 (B, K). Their log-probabilities; -inf marks an empty beam.
        alive_attention: float32 (B, K, T, S). Their attention history.
        finished_tokens: int32 (B, N, T). Completed hypotheses, best first, 0 after </s>.
        finished_scores: float32 (B, N). Normalised scores; -inf marks an empty slot.
        finished_log_probs: float32 (B, N). Raw log-probabilities.
        finished_lengths: int32 (B, N). Lengths including </s>.
        finished_attention: float32 (B, N, T, S). Attention history, zeros after </s>.
        finished_flags: bool (B, N). True where the slot holds a hypothesis.
        limits: int32 (B,). Per-sentence length limits (</s> included).
        source_mask: bool (B, S). True on real source positions (all True when not given).
        model_state: the step function's state, leaves (B * K, ...).

    Every field but ``step`` is sentence-major, so `shrinking.select_sentences` can drop
    finished sentences between calls of `beam_search_continue`.
    """

    step: Any
    alive_tokens: Any
    alive_log_probs: Any
    alive_attention: Any
    finished_tokens: Any
    finished_scores: Any
    finished_log_probs: Any
    finished_lengths: Any
    finished_attention: Any
    finished_flags: Any
    limits: Any
    source_mask: Any
    model_state: Any


def _merge_top(scores, candidates, k):
    """Keep the k best of the concatenated slots: ``candidates`` is a list of (B, M_i, ...)
    tensors aligned with ``scores`` (B, sum M_i). Returns (top scores (B, k), kept tensors)."""
    top_scores, index = ops.top_k(scores, k=k, sorted=True)
    return top_scores, [take_beams(tensor, index) for tensor in candidates]


def _append(pool, candidates, keep, empty):
    """Concatenate the pool (B, N, ...) with the candidates (B, 2K, ...) kept where ``keep``."""
    keep = ops.reshape(keep, tuple(ops.shape(keep)) + (1,) * (len(ops.shape(candidates)) - 2))
    candidates = ops.where(keep, candidates, ops.cast(empty, candidates.dtype))
    return ops.concatenate([pool, candidates], axis=1)


def advance(carry, log_probs, model_state, attention, config):
    """One beam step at time ``carry.step``, given the step function's outputs for it.

    Args:
        carry: the `BeamState` before the step.
        log_probs: float32 (B * K, V), the model's next-token log-probabilities.
        model_state: the model state after the step, leaves (B * K, ...), not yet
            reordered: rows follow ``carry``'s beams.
        attention: float32 (B * K, S), the step's attention (S = 0 without a history).
        config: ``(beam_size, n_best, eos_id, alpha, beta, stop_rule)``.

    Returns:
        The `BeamState` after the step: ``step + 1``, alive beams and model state reordered
        by parent, new </s> candidates merged into the finished pool, done sentences'
        alive beams retired.
    """
    beam_size, n_best, eos_id, alpha, beta, stop_rule = config
    t, limits, source_mask = carry.step, carry.limits, carry.source_mask
    batch_size = ops.shape(carry.alive_log_probs)[0]
    vocab_size = ops.shape(log_probs)[-1]
    log_probs = unflatten_beam_dim(log_probs, batch_size, beam_size)  # B x K x V
    attention = unflatten_beam_dim(attention, batch_size, beam_size)  # B x K x S

    # Top 2K expansions by raw log-probability.
    num_candidates = min(2 * beam_size, beam_size * vocab_size)
    candidate_log_probs, flat_index = expand_beams(
        carry.alive_log_probs, log_probs, t >= limits - 1, eos_id, num_candidates)
    candidate_beam = flat_index // vocab_size  # B x 2K
    candidate_token = flat_index % vocab_size  # B x 2K
    candidate_tokens = write_step(
        take_beams(carry.alive_tokens, candidate_beam), t, candidate_token, axis=2
    )  # B x 2K x T
    candidate_attention = write_step(
        take_beams(carry.alive_attention, candidate_beam),
        t,
        take_beams(attention, candidate_beam),
        axis=2,
    )  # B x 2K x T x S
    is_eos = candidate_token == eos_id
    is_real = candidate_log_probs > NEG_INF

    # Alive: the K best candidates that did not end in </s>.
    alive_log_probs, alive_index = ops.top_k(
        ops.where(is_eos, NEG_INF, candidate_log_probs), k=beam_size, sorted=True
    )
    alive_tokens = take_beams(candidate_tokens, alive_index)
    alive_attention = take_beams(candidate_attention, alive_index)
    parent = take_beams(candidate_beam[:, :, None], alive_index)[:, :, 0]  # B x K
    # Leaves the step passed through (encoder memory, attention keys) are per-sentence
    # constants and stay in place, under every backend (RESULTS.md §2, "Changes 11-12" and
    # "Change 14").
    model_state = gather_beams(model_state, parent, batch_size, beam_size,
                               previous=carry.model_state)

    # Finished: merge the candidates that ended in </s> into the frozen n_best pool. Only
    # the K best candidates may finish (as in fairseq): a </s> ranked below K would not
    # have survived a beam of K, and with K = 1 this makes beam search equal greedy search.
    in_beam = (ops.arange(num_candidates, dtype="int32") < beam_size)[None, :]
    new_finished = ops.logical_and(ops.logical_and(is_eos, is_real), in_beam)  # B x 2K
    lengths = ops.zeros_like(candidate_token) + (t + 1)
    new_scores = candidate_log_probs / beam_helpers.length_penalty(lengths, alpha)
    if beta > 0:
        coverage = ops.sum(candidate_attention, axis=2)  # B x 2K x S
        new_scores += beam_helpers.coverage_penalty(coverage, beta, source_mask)
    # Candidates that did not finish become empty slots, as the docstring of SearchResult says.
    new_scores = ops.where(new_finished, new_scores, NEG_INF)
    finished_scores, kept = _merge_top(
        ops.concatenate([carry.finished_scores, new_scores], axis=1),
        [
            _append(carry.finished_tokens, candidate_tokens, new_finished, 0),
            _append(carry.finished_log_probs, candidate_log_probs, new_finished, NEG_INF),
            _append(carry.finished_lengths, lengths, new_finished, 0),
            _append(carry.finished_attention, candidate_attention, new_finished, 0.0),
            _append(carry.finished_flags, new_finished, new_finished, False),
        ],
        n_best,
    )
    finished_tokens, finished_log_probs, finished_lengths, finished_attention, flags = kept

    # Retire the alive beams of sentences whose n_best-th finished score cannot be beaten
    # ("bound": by any continuation up to the length limit; "current": at its current length).
    horizon = limits if stop_rule == "bound" else ops.zeros_like(limits) + (t + 1)
    best_reachable = ops.max(alive_log_probs, axis=1) / beam_helpers.length_penalty(horizon, alpha)
    done = finished_scores[:, n_best - 1] >= best_reachable
    alive_log_probs = ops.where(done[:, None], NEG_INF, alive_log_probs)

    return BeamState(
        step=t + 1,
        alive_tokens=alive_tokens,
        alive_log_probs=alive_log_probs,
        alive_attention=alive_attention,
        finished_tokens=finished_tokens,
        finished_scores=finished_scores,
        finished_log_probs=finished_log_probs,
        finished_lengths=finished_lengths,
        finished_attention=finished_attention,
        finished_flags=flags,
        limits=limits,
        source_mask=source_mask,
        model_state=model_state,
    )
