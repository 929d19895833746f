"""`MaskedCrossEntropy` and `MaskedAccuracy` on hand-computed cases, under every backend."""

import math

import numpy as np
import pytest

from keras_rnmt.training.losses import MaskedAccuracy, MaskedCrossEntropy

# One sentence of three target positions over a vocabulary of 3 (id 0 is padding):
# position 0: uniform logits, reference 1   -> -log(1/3)
# position 1: probabilities (1/5, 3/5, 1/5), reference 1 -> -log(3/5)
# position 2: padding (reference 0), ignored
LOGITS = np.array([[[0.0, 0.0, 0.0], [0.0, math.log(3.0), 0.0], [5.0, -2.0, 1.0]]], "float32")
TARGET = np.array([[1, 1, 0]], "int32")


def test_cross_entropy_is_the_mean_over_real_tokens():
    expected = (math.log(3.0) + math.log(5.0 / 3.0)) / 2
    loss = MaskedCrossEntropy()(TARGET, LOGITS)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)


def test_label_smoothing_mixes_in_the_mean_negative_log_probability():
    # Position 0: every log-probability is -log 3, so smoothing leaves log 3.
    # Position 1: 0.9 * -log(3/5) + 0.1 * -(2 log(1/5) + log(3/5)) / 3.
    second = 0.9 * math.log(5.0 / 3.0) + 0.1 * -(2 * math.log(0.2) + math.log(0.6)) / 3
    expected = (math.log(3.0) + second) / 2
    loss = MaskedCrossEntropy(label_smoothing=0.1)(TARGET, LOGITS)
    np.testing.assert_allclose(float(loss), expected, rtol=1e-6)


def test_bfloat16_logits_are_scored_in_float32():
    import keras

    logits = keras.ops.cast(LOGITS, "bfloat16")
    loss = MaskedCrossEntropy()(TARGET, logits)
    reference = MaskedCrossEntropy()(TARGET, keras.ops.cast(logits, "float32"))
    assert str(keras.ops.convert_to_numpy(loss).dtype) == "float32"
    np.testing.assert_allclose(float(loss), float(reference), rtol=1e-6)


def test_all_padding_gives_zero_not_nan():
    loss = MaskedCrossEntropy()(np.zeros((1, 3), "int32"), LOGITS)
    assert float(loss) == 0.0


def test_label_smoothing_out_of_range_is_an_error():
    with pytest.raises(ValueError, match=r"label_smoothing.*\[0, 1\)"):
        MaskedCrossEntropy(label_smoothing=1.0)


def test_config_round_trip():
    loss = MaskedCrossEntropy(label_smoothing=0.2, pad_id=3)
    again = MaskedCrossEntropy.from_config(loss.get_config())
    assert (again.label_smoothing, again.pad_id) == (0.2, 3)


def test_accuracy_counts_real_tokens_only():
    # argmax: position 0 -> 0 (ties go to the first id; reference 1: wrong), position 1 -> 1
    # (right), position 2 is padding. One right of two real tokens.
    metric = MaskedAccuracy()
    metric.update_state(TARGET, LOGITS)
    np.testing.assert_allclose(float(metric.result()), 0.5)
