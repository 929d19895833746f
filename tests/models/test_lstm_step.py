"""`lstm_step` is `keras.layers.LSTMCell`'s step, under every backend."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.models.lstm_step import lstm_step


@pytest.mark.parametrize("use_bias", [True, False])
def test_lstm_step_equals_the_keras_cell(use_bias):
    keras.utils.set_random_seed(1)
    cell = keras.layers.LSTMCell(5, use_bias=use_bias, bias_initializer="random_normal")
    cell.build((3, 4))
    rng = np.random.default_rng(0)
    x, h, c = (rng.normal(size=shape).astype("float32") for shape in ((3, 4), (3, 5), (3, 5)))
    expected_h, (_, expected_c) = cell(x, [h, c])
    got_h, (same_h, got_c) = lstm_step(cell, x, (h, c))
    for got, expected in ((got_h, expected_h), (same_h, expected_h), (got_c, expected_c)):
        np.testing.assert_allclose(ops.convert_to_numpy(got), ops.convert_to_numpy(expected),
                                   rtol=1e-6, atol=1e-6)


def test_lstm_step_goes_through_the_given_matmul_for_both_kernels():
    cell = keras.layers.LSTMCell(2)
    cell.build((1, 3))
    seen = []

    def matmul(x, kernel):
        seen.append(kernel.path)
        return ops.matmul(x, kernel)

    lstm_step(cell, np.ones((1, 3), "float32"), (np.zeros((1, 2), "float32"),) * 2, matmul)
    assert seen == [cell.kernel.path, cell.recurrent_kernel.path]


def test_a_cell_with_dropout_is_refused():
    cell = keras.layers.LSTMCell(2, dropout=0.1)
    cell.build((1, 3))
    with pytest.raises(ValueError, match="dropout"):
        lstm_step(cell, np.ones((1, 3), "float32"), (np.zeros((1, 2), "float32"),) * 2)
