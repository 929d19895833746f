"""Log-probabilities as word scores minus a per-row shift, left unsubtracted for the search.

A step's log-probabilities are log P(v) = z_v − log Σ_u exp(z_u): the logits less one
number per row. Subtracting that number from every word costs a pass over (N, V) that the
search does not need: beam search ranks ``alive_k + log P(v | beam k)``, which is
``(alive_k − shift_k) + z_v``, so the shift can go to the K beams' scores instead of the
K·V words' (a (B, K) subtraction), and greedy search needs it only for the chosen word.
Under JAX on the Intel AMX host, SB's beam step of 64 sentences took 18.7–19.2 ms this way
against 20.0–22.3 ms with the log-softmax written out; end to end, beam search gained 3–6%
there and moved within its noise on the AVX2-only host (benchmarks/RESULTS.md §2,
"Change 16").
"""

from typing import Any, NamedTuple

from keras import ops


class ShiftedLogProbs(NamedTuple):
    """``log P(word v | row n) = scores[n, v] − shift[n]``.

    A search step function may return this in place of log-probabilities (N, V).

    Attributes:
        scores: float32 (N, V), e.g. the logits (with any ban on words applied).
        shift: float32 (N,), e.g. ``logsumexp(scores, axis=-1)``.
    """

    scores: Any
    shift: Any


def as_shifted(log_probs):
    """A step's log-probabilities as float32 `ShiftedLogProbs`.

    Args:
        log_probs: float tensor (N, V) of normalised log-probabilities (shift 0), or a
            `ShiftedLogProbs`.

    Returns:
        `ShiftedLogProbs` with float32 scores (N, V) and shift (N,).
    """
    if isinstance(log_probs, ShiftedLogProbs):
        return ShiftedLogProbs(ops.cast(log_probs.scores, "float32"),
                               ops.cast(log_probs.shift, "float32"))
    scores = ops.cast(log_probs, "float32")
    return ShiftedLogProbs(scores, ops.zeros(ops.shape(scores)[:1], dtype="float32"))


def normalized(log_probs):
    """The log-probabilities (N, V) of a `ShiftedLogProbs` (``scores − shift[:, None]``)."""
    return ops.subtract(log_probs.scores, log_probs.shift[:, None])
