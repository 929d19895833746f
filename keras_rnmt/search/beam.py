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

import numbers

from keras import ops, tree

from keras_rnmt.search._decoding import NEG_INF, call_step, read_step, resolve_max_length
from keras_rnmt.search.beam_helpers import add_beam_dim, flatten_beam_dim
from keras_rnmt.search.beam_step import BeamState, advance
from keras_rnmt.search.result import SearchResult

STOP_RULES = ("bound", "current")


def check_stop_rule(stop_rule):
    """Raise a ValueError naming the valid choices unless `stop_rule` is one of them."""
    if stop_rule not in STOP_RULES:
        raise ValueError(
            f"Unknown stop_rule {stop_rule!r}. Valid choices: {', '.join(map(repr, STOP_RULES))}"
        )


def check_positive_int(name, value):
    """Raise a ValueError naming `name` unless `value` is an int >= 1 (not a bool): the
    beam and batch sizes of the search, `Translator` and the export."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"{name} must be a positive int; received {name}={value!r}")


def _check_arguments(beam_size, n_best, alpha, beta, stop_rule):
    check_stop_rule(stop_rule)
    check_positive_int("beam_size", beam_size)
    if not isinstance(n_best, int) or not 1 <= n_best <= beam_size:
        raise ValueError(
            f"n_best must be an int in [1, beam_size]; received n_best={n_best!r}, "
            f"beam_size={beam_size}"
        )
    for name, value in (("length_penalty", alpha), ("coverage_penalty", beta)):
        if not isinstance(value, (int, float)) or not value >= 0:
            raise ValueError(f"{name} must be a float >= 0; received {name}={value!r}")


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
            attention float32 (B*K, S), or ``None`` for a model without attention. A
            leaf of new_state that is the very tensor of ``state`` (passed through) is
            taken for a per-sentence constant and, under JAX and TensorFlow, not
            reordered (`gather_beams`): return a leaf unchanged only if the step never
            changes it.
        initial_state: the state before the first step, leaves (B, ...); tiled here.
        batch_size: int. B.
        beam_size: int. K >= 1. ``beam_size=1`` reproduces `greedy_search` exactly (on a
            GPU, its scores to the last bit or so).
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
    return advance(carry, _tile(log_probs, beam_size), model_state,
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
        return (advance(carry, log_probs, model_state, attention, config),)

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
