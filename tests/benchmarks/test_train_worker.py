"""`train_worker.tensorflow_batches`: the timed batches as a tf.data dataset, in order, with
tf.data's autotuning off (with it on, TensorFlow runs stalled in `fit`'s return)."""

import os
import sys

import numpy as np
import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

from train_worker import tensorflow_batches  # noqa: E402


def batch(source_length, target_length, value):
    return (np.full((2, source_length), value, "int32"),
            np.full((2, target_length), value + 1, "int32"),
            np.full((2, target_length), value + 2, "int32"))


@pytest.mark.tensorflow_only
def test_batches_of_different_shapes_come_back_in_order_with_autotuning_off():
    batches = [batch(3, 4, 10), batch(5, 2, 20), batch(3, 4, 30)]
    data = tensorflow_batches(batches)
    assert data.options().autotune.enabled is False
    out = list(data.as_numpy_iterator())
    assert len(out) == len(batches)
    for ((source, target_in), target_out), (s, ti, to) in zip(out, batches):
        np.testing.assert_array_equal(source, s)
        np.testing.assert_array_equal(target_in, ti)
        np.testing.assert_array_equal(target_out, to)
