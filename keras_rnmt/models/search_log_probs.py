"""The log-probabilities that greedy and beam search read from a model's step."""

import functools

import numpy as np
from keras import ops

from keras_rnmt.log_softmax import log_softmax
from keras_rnmt.search.shifted import ShiftedLogProbs

# <pad> (id 0) and <s> (id 2) are never a translation's next word: the training targets
# never ask for them at a real position, so their logits are untrained noise. Search must
# not pick them (a <pad> argmax would end a greedy hypothesis silently and make beam 1 differ
# from greedy). Ids as in `keras_rnmt.data.SPECIAL_TOKENS`.
NEVER_EMITTED = (0, 2)
_BAN = 1e9


def search_log_probs(logits):
    """log softmax over the target vocabulary with <pad> and <s> excluded.

    The ban is a constant (V,) row subtracted from the logits: 1e9 at the never-emitted
    ids, 0 elsewhere. Built with numpy once per vocabulary size rather than from
    ``one_hot`` inside the program: under JAX, the in-program form made SB's beam step
    (64 × 5 rows, the Intel AMX host) 25.5-27.0 ms against 18.8-19.8 ms with the constant
    (benchmarks/RESULTS.md §2, "Change 13"). A vocabulary size unknown when traced keeps
    the ``one_hot`` form.

    Args:
        logits: float tensor (N, V), any float dtype.

    Returns:
        float32 tensor (N, V): log P(y | ...) with about -1e9 at the never-emitted ids.
    """
    return log_softmax(_banned(logits), axis=-1)


def search_scores(logits):
    """`search_log_probs` as a `ShiftedLogProbs`: the banned logits and their logsumexp.

    The search subtracts the shift where it reads the scores (`keras_rnmt.search.shifted`)
    instead of from every word: under JAX on the Intel AMX host, SB's beam step (64 × 5
    rows) took 18.7–19.2 ms against 20.0–22.3 ms with the log-softmax written out
    (benchmarks/RESULTS.md §2, "Change 16").

    Args:
        logits: float tensor (N, V), any float dtype.

    Returns:
        `ShiftedLogProbs(scores (N, V) float32, shift (N,) float32)` with
        ``scores − shift[:, None]`` equal to `search_log_probs(logits)` up to rounding.
    """
    scores = _banned(logits)
    return ShiftedLogProbs(scores, ops.logsumexp(scores, axis=-1))


def _banned(logits):
    """float32 logits less 1e9 at the never-emitted ids."""
    logits = ops.cast(logits, "float32")
    vocabulary = logits.shape[-1]
    if vocabulary is None:
        dynamic = ops.shape(logits)[-1]
        banned = _BAN * ops.sum(ops.one_hot(ops.array(NEVER_EMITTED, "int32"), dynamic), axis=0)
    else:
        banned = _banned_row(int(vocabulary))
    return ops.subtract(logits, banned)


@functools.lru_cache(maxsize=16)
def _banned_row(vocabulary):
    """float32 (V,) numpy row: 1e9 at `NEVER_EMITTED`, 0 elsewhere (callers never write it)."""
    row = np.zeros((vocabulary,), "float32")
    row[list(NEVER_EMITTED)] = _BAN
    return row
