"""`SearchConstants`: a model's `search_constants()`, computed once for many searches.

A search step can read products of the weights instead of computing them at every step
(`AttentionDecoder.search_constants`: every target word's embedding times the decoder
LSTM's input kernel rows for it). They are worth computing once per model, not per batch
(for SB, 8 GFLOP against about 1 MFLOP saved per beam row and step), so `Translator`
keeps them and computes them again only after the weights they come from change, as they
do between the epochs of a training run that validates with a `Translator`.
"""

import keras
import numpy as np
from keras import ops

from keras_rnmt.matmul_precision import matmul_precision


class SearchConstants:
    """`model.search_constants()` for a model's current weights, cached.

    `constants(model)` compares the variables of `model.search_constant_variables()` with their
    values when the constants were computed: under JAX, whose arrays are immutable, by
    identity (an assigned variable holds a new array); elsewhere against a copy kept for
    that (for SB the target embeddings and the decoder LSTM's input kernel, 10 MB: a few
    ms a call). The model and the matmul precision, which rounds the products, are part
    of the key. A model without `search_constants()` gets `{}`.

    Example:
    ```python
    constants = SearchConstants()
    model.search_step(tokens, state, constants=constants(model))
    ```
    """

    def __init__(self):
        self._key = None  # (model, matmul precision, the variables' values when computed)
        self._constants = {}

    def __call__(self, model):
        if not hasattr(model, "search_constants"):
            return {}
        values = _values(model.search_constant_variables())
        key = self._key
        if key is None or key[0] is not model or key[1] != matmul_precision() or not _same(
                key[2], values):
            keep = values if _immutable() else [np.array(value) for value in values]
            self._key = (model, matmul_precision(), keep)
            self._constants = model.search_constants()
        return self._constants


def _values(variables):
    if _immutable():
        return [v.value for v in variables]
    return [ops.convert_to_numpy(v.value) for v in variables]


def _immutable():
    return keras.backend.backend() == "jax"


def _same(kept, values):
    if len(kept) != len(values):
        return False
    if _immutable():
        return all(a is b for a, b in zip(kept, values))
    return all(np.array_equal(a, b) for a, b in zip(kept, values))
