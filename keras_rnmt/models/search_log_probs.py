"""The log-probabilities that greedy and beam search read from a model's step."""

import functools

import numpy as np
from keras import ops

from keras_rnmt.log_softmax import log_softmax

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
    logits = ops.cast(logits, "float32")
    vocabulary = logits.shape[-1]
    if vocabulary is None:
        dynamic = ops.shape(logits)[-1]
        banned = _BAN * ops.sum(ops.one_hot(ops.array(NEVER_EMITTED, "int32"), dynamic), axis=0)
    else:
        banned = _banned_row(int(vocabulary))
    return log_softmax(ops.subtract(logits, banned), axis=-1)


@functools.lru_cache(maxsize=16)
def _banned_row(vocabulary):
    """float32 (V,) numpy row: 1e9 at `NEVER_EMITTED`, 0 elsewhere (callers never write it)."""
    row = np.zeros((vocabulary,), "float32")
    row[list(NEVER_EMITTED)] = _BAN
    return row
