"""The log-probabilities that greedy and beam search read from a model's step."""

from keras import ops

from keras_rnmt.log_softmax import log_softmax

# <pad> (id 0) and <s> (id 2) are never a translation's next word: the training targets
# never ask for them at a real position, so their logits are untrained noise. Search must
# not pick them (a <pad> argmax would end a greedy hypothesis silently and make beam 1 differ
# from greedy). Ids as in `keras_rnmt.data.SPECIAL_TOKENS`.
NEVER_EMITTED = (0, 2)


def search_log_probs(logits):
    """log softmax over the target vocabulary with <pad> and <s> excluded.

    Args:
        logits: float tensor (N, V), any float dtype.

    Returns:
        float32 tensor (N, V): log P(y | ...) with -1e9 at the never-emitted ids.
    """
    logits = ops.cast(logits, "float32")
    vocabulary = ops.shape(logits)[-1]
    banned = ops.sum(ops.one_hot(ops.array(NEVER_EMITTED, "int32"), vocabulary), axis=0)
    return log_softmax(logits - 1e9 * banned, axis=-1)
