"""Shuffles seeded by the epoch (`make_dataset`'s `epoch`), so that a resumed run sees the
batches of one that never stopped.

`Dataset.shuffle(seed=s, reshuffle_each_iteration=True)` gives each new iterator the next
order of `s`'s sequence, and a new process starts that sequence again: a run that
`keras.callbacks.BackupAndRestore` resumed trained its first epoch after the restart on the
pair and batch orders of the run's first epoch, and so on. Here pass `i` of a dataset
seeded `s` is shuffled with seeds of `(s, i)` alone.
"""

import tensorflow as tf

# Passes per seed that get seeds of their own (`pass_seed`).
PASSES = 1 << 20
# The op-level seed next to `pass_seed`'s (TensorFlow's default when only one is given).
FIRST_SEED = 87654321


def pass_seed(seed, index, stream):
    """The shuffle seed of pass `index`, for one of its shuffles, of a dataset seeded `seed`.

    Args:
        seed: int, the dataset's seed.
        index: int64 scalar tensor, the pass (the epoch, unless the dataset repeats).
        stream: int, which shuffle of the pass: 0 the pairs, 1 the batches.

    Returns:
        An int64 scalar tensor, positive and distinct for every `(seed, index, stream)` with
        `0 <= seed`, `0 <= index < PASSES` and `stream` in {0, 1}.
    """
    return (tf.constant(seed, tf.int64) * PASSES + index) * 2 + stream + 1


def seeded_shuffle(dataset, buffer_size, seed):
    """`dataset.shuffle(buffer_size, seed, reshuffle_each_iteration=False)` for a seed tensor.

    `Dataset.shuffle` takes a tensor seed, but its Python-side seed handling
    (`random_seed.get_seed`) tests the seed for truth, which fails inside a traced `tf.data`
    function when the global seed is 0 (`keras.utils.set_random_seed(0)`). The op itself
    takes its two seeds as tensors.

    Args:
        dataset: a `tf.data.Dataset` of dense tensors.
        buffer_size: int, the shuffle buffer.
        seed: int64 scalar tensor, nonzero.

    Returns:
        The shuffled dataset: the same order from every iterator.
    """
    specs = tf.nest.flatten(dataset.element_spec)
    variant = tf.raw_ops.ShuffleDatasetV3(
        input_dataset=tf.data.experimental.to_variant(dataset),
        buffer_size=tf.constant(buffer_size, tf.int64),
        seed=tf.constant(FIRST_SEED, tf.int64), seed2=seed,
        seed_generator=tf.raw_ops.DummySeedGenerator(),
        output_types=[spec.dtype for spec in specs],
        output_shapes=[spec.shape for spec in specs],
        reshuffle_each_iteration=False)
    return tf.data.experimental.from_variant(variant, dataset.element_spec)
