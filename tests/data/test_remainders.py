"""`make_dataset(merge_remainders=True)`: the length buckets' leftovers batched together."""

import collections

import numpy as np
import pytest
from toy_pairs import SOURCES, TARGETS, tokenizers

from keras_rnmt.data import make_dataset
from keras_rnmt.data.remainders import merged_width

TOKENIZERS = tokenizers()

# Pure tf.data: these datasets are the same under every backend (the pipeline never calls
# the backend), so this file runs in the tensorflow pass only. The datasets feeding
# `model.fit` under each backend are tested in test_pipeline.py and tests/training.
pytestmark = pytest.mark.tensorflow_only


def epoch(dataset):
    """One pass as numpy `(source, target_in, target_out)` triples."""
    return [(np.asarray(s), np.asarray(t_in), np.asarray(t_out)) for (s, t_in), t_out in dataset]


def rows(batch):
    """The batch's pairs, padding stripped: a sorted tuple of (source ids, target ids)."""
    source, _, target_out = batch
    return tuple(sorted((tuple(s[s != 0]), tuple(t[t != 0])) for s, t in zip(source, target_out)))


def longest(batch):
    source, target_in, _ = batch
    return max((source != 0).sum(axis=1).max(), (target_in != 0).sum(axis=1).max())


def dataset(**kwargs):
    settings = {"batch_size": 16, "bucket_width": 1, "pad_to_bucket": True, "seed": 3, **kwargs}
    return make_dataset(SOURCES, TARGETS, *TOKENIZERS, **settings)


def test_merged_width_is_8_rounded_up_to_a_multiple_of_the_bucket_width():
    assert [merged_width(width) for width in (1, 2, 3, 4, 5, 8, 16)] == [8, 8, 9, 8, 10, 8, 16]


@pytest.mark.parametrize("bucket_width", [1, 2])
def test_full_batches_stay_and_leftovers_fill_batches_of_coarser_buckets(bucket_width):
    plain = epoch(dataset(bucket_width=bucket_width))
    merged = epoch(dataset(bucket_width=bucket_width, merge_remainders=True))
    # Every pair exactly once.
    pairs = collections.Counter(pair for batch in merged for pair in rows(batch))
    assert pairs == collections.Counter(pair for batch in plain for pair in rows(batch))
    assert sum(pairs.values()) == len(SOURCES)
    # The same seed gives the same full batches as plain bucketing.
    full = [rows(batch) for batch in plain if len(batch[0]) == 16]
    assert set(full) <= {rows(batch) for batch in merged}
    # The leftovers: fewer batches, fewer shapes, at most one incomplete batch per 8 tokens.
    coarse = merged_width(bucket_width)
    for batch in merged:
        width = batch[0].shape[1]
        assert batch[0].shape == batch[1].shape == batch[2].shape
        # A bucket's own batch, padded to its bound, or a merged one, padded to a coarse bound.
        assert width - bucket_width < longest(batch) <= width or (
            width % coarse == 0 and width - coarse < longest(batch) <= width)
    incomplete = [batch for batch in merged if len(batch[0]) < 16]
    assert len({batch[0].shape[1] for batch in incomplete}) == len(incomplete)
    assert all(batch[0].shape[1] % coarse == 0 for batch in incomplete)
    assert len(incomplete) < sum(len(batch[0]) < 16 for batch in plain)
    assert len({batch[0].shape for batch in merged}) < len({batch[0].shape for batch in plain})


def test_leftovers_change_with_the_shuffle_and_the_shapes_do_not():
    data = dataset(merge_remainders=True)
    first, second = epoch(data), epoch(data)
    assert sorted(b[0].shape for b in first) == sorted(b[0].shape for b in second)
    assert {rows(batch) for batch in first} != {rows(batch) for batch in second}


def test_token_batches_keep_their_budget():
    for batch in epoch(dataset(batch_size=120, batch_by="tokens", merge_remainders=True)):
        assert batch[0].shape[0] * batch[0].shape[1] <= 120


def test_unshuffled_merged_batches_are_the_same_every_pass():
    data = dataset(shuffle=False, merge_remainders=True)
    assert [rows(batch) for batch in epoch(data)] == [rows(batch) for batch in epoch(data)]


def test_nothing_to_merge_at_width_8_or_in_a_repeated_stream():
    for kwargs in ({"bucket_width": 8, "shuffle": False}, {"repeat": True}):
        plain, merged = dataset(**kwargs), dataset(merge_remainders=True, **kwargs)
        assert [rows(batch) for batch in epoch(plain.take(40))] == \
            [rows(batch) for batch in epoch(merged.take(40))]


def test_merging_needs_static_bucket_shapes():
    with pytest.raises(ValueError, match="needs `pad_to_bucket=True`"):
        dataset(pad_to_bucket=False, merge_remainders=True)
