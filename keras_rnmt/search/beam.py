"""Batched beam search with GNMT length and coverage penalties (Wu et al., 2016, Sec. 7).

The search keeps two sets per sentence, as in GNMT/Tensor2Tensor and the Flax WMT example:

- *alive*: the K best unfinished hypotheses by raw log-probability; only these are expanded.
- *finished*: the ``n_best`` best completed hypotheses by normalised score
  ``log P / lp(|Y|) + cp``. A hypothesis enters it when it emits </s> and is frozen there:
  it is never expanded again and its tokens, score and attention no longer change.

Each step expands the K alive beams over the vocabulary and keeps the top 2K candidates:
at most K of them end in </s>, so at least K unfinished ones remain to refill *alive*,
while the </s> candidates are merged into *finished*. A sentence is done when its
``n_best``-th finished score is at least the best score any alive beam could still reach
(its log-probability can only fall, lp only grows up to the sentence's length limit, and
cp <= 0): ``stop_rule="bound"``, exact. With ``stop_rule="current"`` the best alive score is
taken at the beams' current length instead, so a sentence stops as soon as its best
hypothesis so far has finished (JoeyNMT's, OpenNMT's and Hugging Face's default rule): a
heuristic, since an alive beam could still overtake with length normalisation, but the
search no longer runs on until the length limit shrinks every alive score. Either way the
sentence's alive beams are then retired (log-probability -inf). The loop stops when no
sentence has an alive beam, or after T steps.
"""

from typing import Any, NamedTuple

from keras import ops, tree

from keras_rnmt.search import beam_helpers
from keras_rnmt.search._decoding import (
    NEG_INF,
    call_step,
    read_step,
    resolve_max_length,
    write_step,
)
from keras_rnmt.search.beam_helpers import (
    add_beam_dim,
    flatten_beam_dim,
    gather_beams,
    take_beams,
    unflatten_beam_dim,
)
from keras_rnmt.search.result import SearchResult
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


STOP_RULES = ("bound", "current")


def check_stop_rule(stop_rule):
    """Raise a ValueError naming the valid choices unless `stop_rule` is one of them."""
    if stop_rule not in STOP_RULES:
        raise ValueError(
            f"Unknown stop_rule {stop_rule!r}. Valid choices: {', '.join(map(repr, STOP_RULES))}"
        )


def _check_arguments(beam_size, n_best, alpha, beta, stop_rule):
    check_stop_rule(stop_rule)
    if not isinstance(beam_size, int) or beam_size < 1:
        raise ValueError(f"beam_size must be a positive int; received beam_size={beam_size!r}")
    if not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
        raise ValueError(
            f"n_best must be an int in [1, beam_size]; received n_best={n_best!r}, "
            f"beam_size={beam_size}"
        )
    for name, value in (("length_penalty", alpha), ("coverage_penalty", beta)):
        if not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{name} must be a float >= 0; received {name}={value!r}")


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


def _advance(carry, log_probs, model_state, attention, config):
    """One beam step at time ``carry.step`` given the step function's outputs."""
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
    model_state = gather_beams(model_state, parent, batch_size, beam_size)

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


def beam_search(
    step_fn,
    initial_state,
    *,
    batch_size,
    beam_size,
    bos_id,
    eos_id,
    max_length,
    length_penalty=0.0,
    coverage_penalty=0.0,
    source_mask=None,
    n_best=1,
    max_steps=None,
    stop_rule="current",
    keep_attention=True,
):
    """Find the ``n_best`` best translations of every sentence with batched beam search.

    Hypotheses are ranked by the GNMT score s(Y, X) = log P(Y|X) / lp(Y) + cp(X; Y) with
    lp(Y) = ((5 + |Y|) / 6) ** alpha and cp = beta * sum_i log(min(sum_j a_ij, 1)) (Wu et
    al., 2016, Eq. 14). The beams are expanded by raw log-probability; see the module
    docstring for the alive/finished formulation and the stopping rule. The model state
    is tiled to B * K rows and reordered with `gather_beams`, whatever its structure.

    Args:
        step_fn: callable ``(tokens, state) -> (log_probs, new_state, attention)``:
            tokens int32 (B*K,), the previous ids (``bos_id`` first); state any nested
            structure of batch-major tensors (B*K, ...); log_probs float32 (B*K, V)
            normalised; new_state with the structure, shapes and dtypes of ``state``;
            attention float32 (B*K, S), or ``None`` for a model without attention.
        initial_state: the state before the first step, leaves (B, ...); tiled here.
        batch_size: int. B.
        beam_size: int. K >= 1. ``beam_size=1`` reproduces `greedy_search` exactly.
        bos_id: int. Id fed at the first step.
        eos_id: int. End-of-sentence id.
        max_length: int, or int tensor (B,) of per-sentence limits, counting </s>; a
            hypothesis reaching its limit gets </s> forced (scored with its model
            log-probability).
        length_penalty: float alpha >= 0. Defaults to 0 (no length normalisation).
        coverage_penalty: float beta >= 0. Defaults to 0. Needs attention from the model.
        source_mask: optional bool tensor (B, S), True on real source tokens; padded
            positions are left out of the coverage penalty.
        n_best: int in [1, beam_size]. Hypotheses returned per sentence. Defaults to 1.
        max_steps: optional int, the static output length T; needed only when
            ``max_length`` is a tensor traced by ``jax.jit``/``tf.function``.
        stop_rule: str. When a sentence stops: "current" (default) once no alive beam
            beats its n_best-th finished score at the beam's current length (the common
            heuristic: on Multi30k it searches less and scores higher), "bound" once none
            can beat it by any continuation within its length limit (exact search).
        keep_attention: bool. Carry every hypothesis' attention history (B, K, T, S) and
            return it. Defaults to True. False saves rewriting those buffers at every step
            (what a caller that only needs the tokens wants, e.g. the SavedModel); the
            result's attention is then ``None``. Needs ``coverage_penalty=0``.

    Returns:
        `SearchResult` with tokens (B, n_best, T), scores (B, n_best) sorted best first,
        log_probs (B, n_best), lengths (B, n_best), attention (B, n_best, T, S) or ``None``.

    Example:
    >>> import numpy as np
    >>> # log P(next | previous) over <pad>, <s>, </s>, a: <s> -> a .6 | </s> .4;
    >>> # a -> </s> .9 | a .1 (pad and </s> rows are never used).
    >>> probs = np.array([[1, 0, 0, 0], [0, 0, .4, .6], [1, 0, 0, 0], [0, 0, .9, .1]])
    >>> table = np.log(probs + 1e-9)
    >>> step = lambda tokens, state: (ops.take(table, tokens, axis=0), state, None)
    >>> result = beam_search(step, {}, batch_size=1, beam_size=2, bos_id=1, eos_id=2,
    ...                      max_length=4, n_best=2)
    >>> ops.convert_to_numpy(result.tokens)[0].tolist()  # "a </s>" (.54), then "</s>" (.4)
    [[3, 2, 0, 0], [2, 0, 0, 0]]

    References:
        Wu et al., 2016. Google's Neural Machine Translation System. arXiv:1609.08144.
    """
    carry = beam_search_start(  # checks the arguments before any step runs
        step_fn, initial_state, batch_size=batch_size, beam_size=beam_size, bos_id=bos_id,
        eos_id=eos_id, max_length=max_length, length_penalty=length_penalty,
        coverage_penalty=coverage_penalty, source_mask=source_mask, n_best=n_best,
        max_steps=max_steps, stop_rule=stop_rule, keep_attention=keep_attention,
    )
    carry = beam_search_continue(
        step_fn, carry, beam_size=beam_size, eos_id=eos_id,
        length_penalty=length_penalty, coverage_penalty=coverage_penalty, n_best=n_best,
        stop_rule=stop_rule,
    )
    return beam_search_result(carry)


def beam_search_start(step_fn, initial_state, *, batch_size, beam_size, bos_id, eos_id,
                      max_length, length_penalty=0.0, coverage_penalty=0.0, source_mask=None,
                      n_best=1, max_steps=None, stop_rule="current", keep_attention=True):
    """The `BeamState` after the first step (arguments as `beam_search`).

    The first step runs on the B sentences, not on B * K rows: every beam would start from
    its sentence's state and <s>, so its K rows would be copies (and only beam 0 is alive).
    Its log-probabilities, new state and attention are then tiled to the K beams. With
    `beam_search_continue` and `shrinking.select_sentences` a caller can run the rest in
    chunks of steps and drop the sentences that are done in between (`Translator` does).
    """
    _check_arguments(beam_size, n_best, length_penalty, coverage_penalty, stop_rule)
    limits, steps = resolve_max_length(max_length, batch_size, max_steps)
    bos = ops.full((batch_size,), bos_id, dtype="int32")
    log_probs, model_state, attention, has_attention = call_step(step_fn, bos, initial_state)
    if coverage_penalty > 0 and not has_attention:
        raise ValueError(
            f"coverage_penalty={coverage_penalty} needs attention, but step_fn returned "
            "attention=None"
        )
    if not keep_attention:
        if coverage_penalty > 0:
            raise ValueError(
                f"coverage_penalty={coverage_penalty} needs the attention history; "
                "pass keep_attention=True"
            )
        # Buffers with 0 source positions, as for a model without attention.
        has_attention = False
        attention = ops.zeros((batch_size, 0), dtype="float32")
    source_length = ops.shape(attention)[-1]
    if source_mask is None or not has_attention:
        source_mask = ops.ones((batch_size, source_length), dtype="bool")
    beams = (batch_size, beam_size)
    pool = (batch_size, n_best)
    first_beam = ops.arange(beam_size, dtype="int32") == 0
    model_state = _tile(model_state, beam_size)
    carry = BeamState(
        step=ops.convert_to_tensor(0, dtype="int32"),
        alive_tokens=ops.zeros(beams + (steps,), dtype="int32"),
        # Only beam 0 is alive at first, so the K beams do not start as K copies.
        alive_log_probs=ops.where(first_beam, ops.zeros(beams, dtype="float32"), NEG_INF),
        alive_attention=ops.zeros(beams + (steps, source_length), dtype="float32"),
        finished_tokens=ops.zeros(pool + (steps,), dtype="int32"),
        finished_scores=ops.full(pool, NEG_INF, dtype="float32"),
        finished_log_probs=ops.full(pool, NEG_INF, dtype="float32"),
        finished_lengths=ops.zeros(pool, dtype="int32"),
        finished_attention=ops.zeros(pool + (steps, source_length), dtype="float32"),
        finished_flags=ops.zeros(pool, dtype="bool"),
        limits=limits,
        source_mask=ops.cast(source_mask, "bool"),
        model_state=model_state,
    )
    config = (beam_size, n_best, eos_id, length_penalty, coverage_penalty, stop_rule)
    return _advance(carry, _tile(log_probs, beam_size), model_state,
                    _tile(attention, beam_size), config)


def beam_search_continue(step_fn, carry, *, beam_size, eos_id, length_penalty=0.0,
                         coverage_penalty=0.0, n_best=1, stop_rule="current", until=None):
    """Run beam steps from ``carry`` until no sentence is alive, step T, or step ``until``.

    Args:
        step_fn, beam_size, ...: as `beam_search`.
        carry: a `BeamState` from `beam_search_start` or an earlier call.
        until: optional int scalar (tensor): stop before this step.

    Returns:
        The `BeamState` after the last step run.
    """
    _check_arguments(beam_size, n_best, length_penalty, coverage_penalty, stop_rule)
    steps = ops.shape(carry.alive_tokens)[-1]
    has_attention = _has_attention(carry)
    limit = steps if until is None else ops.minimum(until, steps)
    config = (beam_size, n_best, eos_id, length_penalty, coverage_penalty, stop_rule)

    def cond(carry):
        return ops.logical_and(carry.step < limit, ops.any(carry.alive_log_probs > NEG_INF))

    def body(carry):
        previous = read_step(flatten_beam_dim(carry.alive_tokens), carry.step - 1)
        # Without a history to write (no attention, or keep_attention=False) any attention
        # the step gives is dropped.
        log_probs, model_state, attention, _ = call_step(
            step_fn, previous, carry.model_state, expect_attention=has_attention or None
        )
        if not has_attention:
            attention = ops.zeros((ops.shape(log_probs)[0], 0), dtype="float32")
        return (_advance(carry, log_probs, model_state, attention, config),)

    (carry,) = ops.while_loop(cond, body, (carry,))
    return carry


def beam_search_result(carry):
    """The `SearchResult` of a `BeamState` (its finished pool)."""
    has_attention = _has_attention(carry)
    return SearchResult(
        tokens=carry.finished_tokens,
        scores=carry.finished_scores,
        log_probs=carry.finished_log_probs,
        lengths=carry.finished_lengths,
        attention=carry.finished_attention if has_attention else None,
    )


def _has_attention(carry):
    # Without attention the buffers have a static 0 source positions; with it S is > 0, or
    # unknown (None) in a graph traced with a variable source length.
    return carry.alive_attention.shape[-1] != 0


def _tile(initial_state, beam_size):
    """(B, ...) -> (B * K, ...) for every leaf: each beam starts from its sentence's state."""
    return tree.map_structure(
        lambda x: flatten_beam_dim(add_beam_dim(ops.convert_to_tensor(x), beam_size)),
        initial_state,
    )
