"""Search never emits <pad> or <s>: golden values of `search_log_probs`."""

import math

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.models.search_log_probs import search_log_probs


def test_pad_and_bos_are_excluded_and_the_rest_renormalised():
    # ids: <pad> <unk> <s> </s> a ; <pad> and <s> carry the largest logits.
    logits = np.array([[9.0, 1.0, 8.0, 0.0, 1.0]], "float32")
    log_probs = ops.convert_to_numpy(search_log_probs(logits))
    normaliser = math.log(math.e + 1.0 + math.e)  # over <unk>, </s>, a
    np.testing.assert_allclose(log_probs[0, [1, 3, 4]],
                               [1.0 - normaliser, 0.0 - normaliser, 1.0 - normaliser], rtol=1e-6)
    assert log_probs[0, 0] < -1e8 and log_probs[0, 2] < -1e8
    assert int(np.argmax(log_probs[0])) in (1, 4)


def test_float16_logits_give_float32_log_probs():
    logits = ops.cast(np.array([[3.0, 0.0, 3.0, 1.0]], "float32"), "float16")
    log_probs = search_log_probs(logits)
    assert keras.backend.standardize_dtype(log_probs.dtype) == "float32"
    values = ops.convert_to_numpy(log_probs)
    assert np.isfinite(values[0, [1, 3]]).all()
    np.testing.assert_allclose(np.exp(values[0]).sum(), 1.0, rtol=1e-6)


@pytest.mark.tensorflow_only
def test_a_vocabulary_unknown_when_traced_gives_the_same_values():
    # Only a traced TensorFlow function (e.g. a signature with an unknown vocabulary axis)
    # leaves V unknown; there the ban is built in-program with one_hot. It must give the
    # values of the constant (V,) row used whenever V is static.
    import tensorflow as tf

    logits = np.random.default_rng(0).normal(size=(3, 7)).astype("float32") * 4.0
    traced = tf.function(search_log_probs,
                         input_signature=[tf.TensorSpec((None, None), tf.float32)])
    dynamic = traced(logits).numpy()
    static = ops.convert_to_numpy(search_log_probs(logits))
    np.testing.assert_allclose(dynamic, static, rtol=1e-6, atol=1e-6)
    assert (dynamic[:, [0, 2]] < -1e8).all()
