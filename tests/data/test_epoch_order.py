"""`make_dataset(epoch=...)`: each epoch's batches follow from the seed and the epoch alone."""

import numpy as np
import pytest
import tensorflow as tf
from toy_pairs import SOURCES, TARGETS, tokenizers

from keras_rnmt.data import make_dataset

TOKENIZERS = tokenizers()

# Pure tf.data: these datasets are the same under every backend (the pipeline never calls
# the backend), so this file runs in the tensorflow pass only. The datasets feeding
# `model.fit` under each backend are tested in test_pipeline.py and tests/training.
pytestmark = pytest.mark.tensorflow_only


def one_pass(dataset):
    """A pass as a list of `(source, target_out)` numpy pairs, padding kept."""
    return [(np.asarray(source), np.asarray(target_out))
            for (source, _), target_out in dataset]


def same(first, second):
    return len(first) == len(second) and all(
        a.shape == b.shape and (a == b).all() and c.shape == d.shape and (c == d).all()
        for (a, c), (b, d) in zip(first, second))


def sources_of(batches):
    """Every source of the batches, padding stripped, in order."""
    return [tuple(row[row != 0]) for source, _ in batches for row in source]


def dataset(epoch, **kwargs):
    settings = {"batch_size": 16, "bucket_width": 1, "pad_to_bucket": True,
                "merge_remainders": True, "seed": 3, **kwargs}
    return make_dataset(SOURCES, TARGETS, *TOKENIZERS, epoch=epoch, **settings)


@pytest.mark.parametrize("kwargs", [{}, {"shuffle_batches": False},
                                    {"pad_to_bucket": False, "merge_remainders": False},
                                    {"batch_by": "tokens", "batch_size": 200}])
def test_an_epochs_batches_do_not_depend_on_the_passes_before(kwargs):
    epoch = tf.Variable(0, dtype=tf.int64)
    data = dataset(epoch, **kwargs)
    passes = {}
    for e in (0, 1, 2, 1, 0, 2):  # as a run resumed at epoch 1 would start, and back
        epoch.assign(e)
        passes.setdefault(e, []).append(one_pass(data))
    for e, (first, again) in passes.items():
        assert same(first, again), f"epoch {e} changed with the passes before it"
        assert sorted(sources_of(first)) == sorted(sources_of(passes[0][0]))  # every pair once
    assert not same(passes[0][0], passes[1][0]) and not same(passes[1][0], passes[2][0])
    # A new dataset (a restarted process) at epoch 2 gives epoch 2's batches.
    assert same(one_pass(dataset(tf.Variable(2, dtype=tf.int64), **kwargs)), passes[2][0])
    # And a dataset of another seed other batches.
    other = dataset(tf.Variable(2, dtype=tf.int64), **{**kwargs, "seed": 4})
    assert not same(one_pass(other), passes[2][0])


def test_without_an_epoch_every_iterator_reshuffles_from_the_start_of_the_sequence():
    first, second = dataset(None), dataset(None)
    passes = [one_pass(first), one_pass(first)]
    assert not same(passes[0], passes[1])
    assert same(one_pass(second), passes[0])


def test_a_repeated_stream_starts_at_the_epochs_first_batch():
    steps = 9  # not a pass's batch count: epochs straddle passes
    stream = one_pass(dataset(tf.Variable(0, dtype=tf.int64), repeat=True,
                              steps_per_epoch=steps).take(4 * steps))
    resumed = one_pass(dataset(tf.Variable(2, dtype=tf.int64), repeat=True,
                               steps_per_epoch=steps).take(2 * steps))
    assert same(resumed, stream[2 * steps:])
    # Each pass holds every pair once, ends with its own leftovers, merged.
    single = one_pass(dataset(tf.Variable(0, dtype=tf.int64)))
    pass_batches = len(single)
    two_passes = one_pass(dataset(tf.Variable(0, dtype=tf.int64), repeat=True,
                                  steps_per_epoch=steps).take(2 * pass_batches))
    assert same(two_passes[:pass_batches], single)
    assert sorted(sources_of(two_passes[pass_batches:])) == sorted(sources_of(single))
    assert not same(two_passes[pass_batches:], single)


def test_a_repeated_stream_with_an_epoch_needs_the_epochs_length():
    epoch = tf.Variable(0, dtype=tf.int64)
    with pytest.raises(ValueError, match="needs `steps_per_epoch`"):
        dataset(epoch, repeat=True)
    with pytest.raises(ValueError, match="`steps_per_epoch` must be a positive integer"):
        dataset(epoch, repeat=True, steps_per_epoch=0)
