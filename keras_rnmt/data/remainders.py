"""Batching the length buckets' leftovers together (`make_dataset`'s `merge_remainders`).

Bucketing by length leaves each bucket with a last, incomplete batch, whose shape (sentence
count, bucket length) no other batch has. Under JAX and XLA every batch shape compiles a
program of its own, so at bucket width 1 on Multi30k the 39 leftover batches made the
training's programs 61 instead of 22, and the validation set, whose length buckets are
nearly all smaller than a batch, compiled 37. Merged: 28 and 14, and the first epoch of a
recurrent k=5 run under JAX took 410 s instead of 573 s (`benchmarks/RESULTS.md` §1,
"Merged leftover batches").

Merging keys each example by its bucket while the bucket still fills whole batches, and its
leftovers (the last `count mod batch` examples of a bucket, in the pass's order) by a coarser
bucket, `merged_width(bucket_width)` long (8 tokens at widths 1, 2 and 4), whose batches pad
to that bucket's upper bound. The full batches are exactly those of plain bucketing; the
leftovers of nearby lengths fill whole batches of shapes the full batches mostly have already.
Which examples are leftovers changes with every shuffle; how many each bucket has does not.
"""

import numpy as np
import tensorflow as tf

# Leftovers are bucketed at this width (rounded up to a multiple of the bucket width, so the
# merged batches' lengths are bucket bounds too); the search pads sources to multiples of 8.
MERGED_WIDTH = 8


def merged_width(bucket_width):
    """The coarser bucket width of the leftovers: `MERGED_WIDTH` rounded up to a multiple of
    `bucket_width`, so that merging has an effect only below `MERGED_WIDTH`."""
    return -(-MERGED_WIDTH // bucket_width) * bucket_width


def key_examples(examples, length_func, bucket_width, window_of_bound, merge):
    """A function that keys every `(source, target_in, target_out)` example of a pass by its
    batch bucket.

    Args:
        examples: a `tf.data.Dataset` of one pass's examples, in any order (the unshuffled
            ones): with `merge`, counted here, once, so that counting leaves the shuffles'
            sequences of orders alone.
        length_func: `(source, target_in, target_out) -> int64` length that buckets them.
        bucket_width: int, the bucket width.
        window_of_bound: `int64 bound -> int64` examples per batch in a bucket whose batches
            pad to `bound` tokens (a TensorFlow function).
        merge: bool. Key each bucket's leftovers by their merged bucket (see the module).

    Returns:
        `(key_pass, bound_of_key)`: `key_pass(dataset)` maps one pass of the examples, in
        any order, to a dataset of `(key, source, target_in, target_out)`, with `key` >= 0
        the bucket `(length - 1) // bucket_width` and `key` < 0 the merged bucket
        `-1 - (length - 1) // merged_width(bucket_width)` (it can be called while a
        `tf.data` function is traced); `bound_of_key` maps `key -> int64`, the length its
        batches pad to.
    """
    width = tf.constant(bucket_width, tf.int64)
    coarse = tf.constant(merged_width(bucket_width), tf.int64)

    def bound_of_key(key):
        return tf.where(key >= 0, (key + 1) * width, -key * coarse)

    def bucket(*example):
        return (length_func(*example) - 1) // width

    if not merge or merged_width(bucket_width) == bucket_width:
        return (lambda dataset: dataset.map(lambda *example: (bucket(*example), *example)),
                bound_of_key)

    # One pass over the examples counts each bucket; its first `full` examples of a pass fill
    # whole batches, the rest are leftovers.
    counts = np.zeros(0, np.int64)
    for keys in examples.map(bucket).batch(8192).as_numpy_iterator():
        counts = np.pad(counts, (0, max(0, int(keys.max()) + 1 - counts.size)))
        counts += np.bincount(keys, minlength=counts.size)
    windows = np.array([int(window_of_bound(tf.constant((key + 1) * bucket_width, tf.int64)))
                        for key in range(counts.size)], np.int64)
    full = tf.constant(counts - counts % np.maximum(windows, 1), tf.int64)

    def step(seen, example):
        length = length_func(*example)
        key = (length - 1) // width
        index = tf.gather(seen, key)
        seen = tf.tensor_scatter_nd_add(seen, [[key]], tf.ones([1], tf.int64))
        merged = -1 - (length - 1) // coarse
        return seen, (tf.where(index < tf.gather(full, key), key, merged), *example)

    def key_pass(dataset):
        # `scan` hands each example to `step` as one tuple.
        return dataset.scan(tf.zeros([counts.size], tf.int64), step)

    return key_pass, bound_of_key
