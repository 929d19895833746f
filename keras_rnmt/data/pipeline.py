"""`tf.data` input pipelines for training and for translation.

Training batches are `((source_ids, target_in), target_out)`, all int32 and padded with
`<pad>` = 0:

    source_ids = tokens(source) + [</s>]          # batch x source_len
    target_in  = [<s>] + tokens(target)           # batch x target_len (decoder input)
    target_out = tokens(target) + [</s>]          # batch x target_len (labels)

Sentences are bucketed by source length so that padding stays small: every batch holds
sources whose lengths (with `</s>`) differ by less than `bucket_width`. Bucketing leaves
each bucket's last, incomplete batch until the end of the pass, where they all come out in
bucket order: a run of small batches, shortest sentences first, right before validation.
Training datasets therefore shuffle the batches too (`shuffle_batches`), which spreads those
batches over the epoch. With static bucket shapes (`pad_to_bucket`), `merge_remainders`
batches those leftovers together instead, in coarser buckets, so that they add few batch
shapes, and so few compiled programs (`keras_rnmt.data.remainders`). Given the epoch
`model.fit` is in (`epoch`), each pass is shuffled from the seed and that epoch alone, so a
resumed run sees the batches of one that never stopped (`keras_rnmt.data.epoch_order`).
`model.fit` accepts these datasets under the TensorFlow, JAX and PyTorch backends.
"""

import tensorflow as tf

from keras_rnmt.data.base_tokenizer import BOS_ID, EOS_ID, PAD_ID
from keras_rnmt.data.epoch_order import pass_seed, seeded_shuffle
from keras_rnmt.data.remainders import key_examples
from keras_rnmt.sentence_list import check_sentence_list

BATCH_BY = ("sentences", "tokens")
# Batches held by the batch shuffle (`shuffle_batches`): a whole Multi30k epoch (466-479
# batches of 64) at about 40 KB a batch; on larger corpora the incomplete batches, which
# come last, are spread over the epoch's last 512 batches.
BATCH_SHUFFLE_BUFFER = 512


def _check_positive_int(value, argument):
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"`{argument}` must be a positive integer. Received: {argument}={value!r}")


def _string_tensor(texts, argument):
    texts = list(check_sentence_list(texts, argument))
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"`{argument}` must be a list of str; {argument}[{index}] is "
                             f"{type(text).__name__}: {text!r:.60}")
    return tf.constant(texts, dtype=tf.string, shape=[len(texts)])


def make_dataset(
    sources,
    targets,
    source_tokenizer,
    target_tokenizer,
    *,
    batch_size=64,
    batch_by="sentences",
    max_length=None,
    bucket_width=10,
    shuffle=True,
    shuffle_batches=True,
    seed=0,
    repeat=False,
    drop_remainder=False,
    batch_multiple=1,
    pad_to_bucket=False,
    merge_remainders=False,
    epoch=None,
    steps_per_epoch=None,
):
    """Build the training `tf.data.Dataset` of padded, length-bucketed batches.

    Steps: strings -> tokenize (in `tf.data`) -> optional length guard -> add `<s>` /
    `</s>` -> cache -> shuffle -> (repeat) -> bucket by source length -> pad -> shuffle
    the batches -> prefetch, with `tf.data`'s autotuning off (`without_autotuning`).
    Tokenization runs once; later epochs read the cache (in memory). With `epoch`, every
    pass is built from `epoch` and `seed` alone, so that a resumed run sees the batches
    of one that never stopped.

    Length filtering belongs on the Python side, `corpus.filter_pairs`, which reports
    what it drops; `tf.data` cannot report. `max_length` here is only a guard that
    silently drops pairs with more than `max_length` tokens (before `<s>`/`</s>`) on
    either side; with subword tokenizers, tokens outnumber words.

    Args:
        sources: list of str, source sentences.
        targets: list of str, target sentences aligned with `sources`.
        source_tokenizer: a keras-rnmt tokenizer (`WordTokenizer`, ...).
        target_tokenizer: a keras-rnmt tokenizer.
        batch_size: int. With `batch_by="sentences"`, sentences per batch. With
            `batch_by="tokens"`, the token budget: `batch x max(source_len,
            target_len)` of every padded batch stays within it (a single pair longer
            than the budget still forms a batch of one). Defaults to 64.
        batch_by: str. `"sentences"` (default) or `"tokens"`.
        max_length: int or `None`. Token-length guard, see above. Defaults to `None`.
        bucket_width: int. Width of the length buckets: source lengths in a batch
            differ by less than this (with `batch_by="tokens"`, target lengths too).
            Defaults to 10.
        shuffle: bool. Shuffle the pairs, reshuffling every epoch. Defaults to `True`.
        shuffle_batches: bool. With `shuffle`, also shuffle the padded batches (a buffer
            of `BATCH_SHUFFLE_BUFFER` batches, reshuffled every epoch). Without it every
            pass ends with all the buckets' incomplete batches in bucket order (on Multi30k
            at `bucket_width=1`: 39 batches of 1-63 sentences, the longest sentences last),
            the updates just before each validation. Defaults to `True`; `False` gives
            the batch order of the runs recorded until 2026-11-29 (`benchmarks/RESULTS.md`).
        seed: int. Shuffle seed: the same seed gives the same batches. Defaults to 0.
        repeat: bool. Repeat forever (give `steps_per_epoch` to `fit`). Defaults to
            `False`.
        drop_remainder: bool. Drop each bucket's last, incomplete batch. Defaults to
            `False`.
        batch_multiple: int. Make every batch's sentence count a multiple of this (what
            data-parallel training needs to split a batch evenly over that many devices):
            a bucket's last, incomplete batch is filled up with copies of its first
            sentences whose targets (`target_in` and `target_out`) are all `<pad>`. The
            loss and accuracy ignore `<pad>` targets, so the copies add nothing to them and
            no sentence is dropped. With `batch_by="tokens"`, each bucket's sentence count
            is rounded down to a multiple of this (at least `batch_multiple` sentences), so
            filled-up batches keep the token budget too, unless the budget holds fewer than
            `batch_multiple` sentences of that length. Defaults to 1 (batches as they come).
        pad_to_bucket: bool. Group by the longer side's bucket and pad source and target
            to that bucket's upper bound, so every batch has one of a few static shapes
            (what compiled JAX/XLA training wants). Defaults to `False`.
        merge_remainders: bool. With `pad_to_bucket`, batch each bucket's leftovers (what
            would be its last, incomplete batch) with those of nearby lengths, in buckets of
            `MERGED_WIDTH` (8) tokens padded to their upper bound, instead of one small batch
            per bucket of a shape no other batch has (`keras_rnmt.data.remainders`). Full
            batches stay as they are; fewer distinct shapes means fewer compiled programs
            (on Multi30k at `bucket_width=1`: 28 training shapes instead of 61). No effect at
            `bucket_width >= 8`, or with `repeat` and no `epoch` (buckets then never end).
            Defaults to `False`.
        epoch: a scalar integer `tf.Variable`, or `None` (default). The epoch `model.fit`
            is in (`keras_rnmt.training.resume.DataEpoch` sets it). Each new iterator reads
            it, and its pass is shuffled with seeds of `seed` and that epoch alone
            (`keras_rnmt.data.epoch_order`), not with the next order of the seed's
            sequence: epoch `e` gets the same batches whether the run started at epoch 0
            or resumed at `e`. With `repeat`, the stream of passes 0, 1, 2, ... (each
            ending with its buckets' leftovers) starts at epoch `e`'s first batch,
            `e * steps_per_epoch` batches in (skipping runs the pipeline over them: a
            Multi30k pass of 456 batches takes 1.3-1.5 s on 2 cores). Without it every new
            iterator reshuffles (`reshuffle_each_iteration`), the first one from the start
            of the sequence.
        steps_per_epoch: int, the batches of an epoch; needed with `repeat` and `epoch`.

    Returns:
        A `tf.data.Dataset` of `((source_ids, target_in), target_out)`, each an int32
        tensor of shape `(batch, length)`. Its batch count is unknown to `tf.data`
        (`with_batch_count` declares it, for `model.fit`).

    Example:
    ```python
    sources, targets, report = filter_pairs(sources, targets, max_length=50)
    dataset = make_dataset(sources, targets, source_tokenizer, target_tokenizer,
                           batch_size=64)
    model.fit(dataset, epochs=10)
    ```
    """
    if batch_by not in BATCH_BY:
        raise ValueError(
            f"`batch_by` must be one of {list(BATCH_BY)}. Received: batch_by={batch_by!r}"
        )
    _check_positive_int(batch_size, "batch_size")
    _check_positive_int(bucket_width, "bucket_width")
    _check_positive_int(batch_multiple, "batch_multiple")
    if max_length is not None:
        _check_positive_int(max_length, "max_length")
    if steps_per_epoch is not None:
        _check_positive_int(steps_per_epoch, "steps_per_epoch")
    if epoch is not None and repeat and steps_per_epoch is None:
        raise ValueError("A repeated dataset with an `epoch` needs `steps_per_epoch`, the "
                         "batches of an epoch, to start at that epoch's first batch")
    if merge_remainders and not pad_to_bucket:
        raise ValueError("`merge_remainders` batches leftovers at fixed bucket lengths and "
                         "needs `pad_to_bucket=True`")
    source_texts = _string_tensor(sources, "sources")
    target_texts = _string_tensor(targets, "targets")
    if len(source_texts) != len(target_texts):
        raise ValueError(
            "`sources` and `targets` must have the same length. Received: "
            f"{len(source_texts)} sources, {len(target_texts)} targets"
        )
    if not len(source_texts):
        raise ValueError("`sources` is empty: there is nothing to train on")

    dataset = tf.data.Dataset.from_tensor_slices((source_texts, target_texts))
    # Tokenizing a thousand sentences per call is much faster than one at a time.
    dataset = dataset.batch(1024).map(
        lambda source, target: (
            source_tokenizer.tokenize(source),
            target_tokenizer.tokenize(target),
        ),
        num_parallel_calls=tf.data.AUTOTUNE,
    )
    dataset = dataset.unbatch()
    if max_length is not None:
        dataset = dataset.filter(
            lambda source, target: tf.logical_and(
                tf.size(source) <= max_length, tf.size(target) <= max_length
            )
        )
    dataset = dataset.map(_add_special_tokens, num_parallel_calls=tf.data.AUTOTUNE)
    examples = dataset.cache()

    def source_length(source, target_in, target_out):
        return tf.size(source, out_type=tf.int64)

    def target_length(source, target_in, target_out):
        return tf.size(target_in, out_type=tf.int64)

    def bucket(length):
        # Lengths 1..w go to bucket 0, w+1..2w to bucket 1, ...
        return (length - 1) // bucket_width

    def sentences_within_budget(longest):
        # Token batches: as many sentences of length `longest` as the budget holds, rounded
        # down to a multiple of `batch_multiple` (at least one multiple).
        multiple = tf.constant(batch_multiple, tf.int64)
        return tf.maximum(multiple, batch_size // longest // multiple * multiple)

    # `key_pass` keys every example `(key, source, target_in, target_out)` by its batch bucket.
    if pad_to_bucket:
        # One static shape per bucket: compiled backends (JAX, XLA) compile once per bucket
        # instead of once per (source, target) length pair.
        def window_of_bound(bound):
            if batch_by == "sentences":
                return tf.constant(batch_size, tf.int64)
            return sentences_within_budget(bound)

        # A repeated stream of one seed never ends a pass: its buckets have no leftovers.
        key_pass, bound_of_key = key_examples(
            examples,
            lambda *example: tf.maximum(source_length(*example), target_length(*example)),
            bucket_width, window_of_bound,
            merge=merge_remainders and not (repeat and epoch is None))

        def window_size_func(key):
            return window_of_bound(bound_of_key(key))

        def shape_of_key(key):
            return [bound_of_key(key)]

    elif batch_by == "sentences":
        def key_pass(dataset):
            return dataset.map(lambda *example: (bucket(source_length(*example)), *example))

        def window_size_func(key):
            return tf.constant(batch_size, tf.int64)

        def shape_of_key(key):
            return [None]

    else:
        # The key packs (source bucket, target bucket): both sides' lengths are bounded.
        stride = tf.constant(1 << 31, tf.int64)

        def key_pass(dataset):
            return dataset.map(lambda *example: (
                bucket(source_length(*example)) * stride + bucket(target_length(*example)),
                *example))

        def window_size_func(key):
            return sentences_within_budget((tf.maximum(key // stride, key % stride) + 1)
                                           * bucket_width)

        def shape_of_key(key):
            return [None]

    def reduce_func(key, window):
        shape = shape_of_key(key)
        return window.map(lambda key, *example: example).padded_batch(
            window_size_func(key),
            padded_shapes=(shape, shape, shape),
            padding_values=(PAD_ID, PAD_ID, PAD_ID),
            drop_remainder=drop_remainder,
        )

    def batches(pairs, shuffled):
        """The padded batches of `pairs`, shuffled by `shuffled(dataset, buffer_size, stream)`
        (stream 0 the pairs, 1 the batches) as asked."""
        if shuffle:
            pairs = shuffled(pairs, len(sources), 0)
        if repeat and epoch is None:
            pairs = pairs.repeat()
        dataset = key_pass(pairs).group_by_window(
            key_func=lambda key, *example: key, reduce_func=reduce_func,
            window_size_func=window_size_func)
        if batch_multiple > 1:
            dataset = dataset.map(lambda *batch: _fill_up(batch, batch_multiple))
        if shuffle and shuffle_batches:
            dataset = shuffled(dataset, BATCH_SHUFFLE_BUFFER, 1)
        return dataset

    if epoch is None:
        # Every new iterator reshuffles; the batch shuffle has its own seed stream.
        dataset = batches(examples, lambda dataset, size, stream: dataset.shuffle(
            size, seed=seed + stream, reshuffle_each_iteration=True))
    else:
        def one_pass(index):
            return batches(examples, lambda dataset, size, stream: seeded_shuffle(
                dataset, size, pass_seed(seed, index, stream)))

        def from_epoch(first):
            if not repeat:
                return one_pass(first)
            # The stream of passes 0, 1, 2, ..., from the first batch of epoch `first`.
            return tf.data.Dataset.counter().flat_map(one_pass).skip(first * steps_per_epoch)

        # Read when an iterator starts, which `model.fit` does after `on_epoch_begin`.
        dataset = tf.data.Dataset.from_tensors(tf.constant(0, tf.int64)).map(
            lambda _: tf.cast(epoch.value(), tf.int64)).flat_map(from_epoch)
    dataset = dataset.map(lambda source, target_in, target_out: ((source, target_in), target_out))
    return without_autotuning(dataset.prefetch(tf.data.AUTOTUNE))


def without_autotuning(dataset):
    """`dataset` with `tf.data`'s autotuning turned off (`tf.data.Options().autotune`).

    With autotuning on, every iterator runs a model thread that re-tunes the pipeline at
    intervals that double up to 60 s, and destroying the iterator waits for that thread.
    `model.fit` makes a new iterator every epoch and destroys it when the data runs out:
    in Multi30k runs, epochs of about 146 s of steps often ended with the trainer idle
    for another 60 s in that destructor before validation began (`benchmarks/RESULTS.md`
    §4, "The 60 s at the end of an epoch"). These pipelines are never the bottleneck,
    tuned or not: a whole pass over Multi30k's 466 training batches takes 0.6-1.9 s on
    2 cores either way.

    Args:
        dataset: a `tf.data.Dataset`.

    Returns:
        The same dataset with `options().autotune.enabled` False.
    """
    options = tf.data.Options()
    options.autotune.enabled = False
    return dataset.with_options(options)


def _fill_up(batch, multiple):
    """`(source, target_in, target_out)` with rows appended up to a multiple of `multiple`:
    copies of the first sources with all-`<pad>` targets (`make_dataset`'s `batch_multiple`)."""
    source, target_in, target_out = batch
    size = tf.shape(source)[0]
    missing = tf.math.floormod(-size, multiple)
    source = tf.concat([source, tf.gather(source, tf.range(missing) % size)], axis=0)
    rows = [[0, missing], [0, 0]]
    return (source, tf.pad(target_in, rows, constant_values=PAD_ID),
            tf.pad(target_out, rows, constant_values=PAD_ID))


def _add_special_tokens(source, target):
    source = tf.cast(source, tf.int32)
    target = tf.cast(target, tf.int32)
    eos = tf.constant([EOS_ID], tf.int32)
    bos = tf.constant([BOS_ID], tf.int32)
    return (
        tf.concat([source, eos], axis=0),
        tf.concat([bos, target], axis=0),
        tf.concat([target, eos], axis=0),
    )


def make_inference_batches(sources, source_tokenizer, batch_size=64):
    """Batches of source ids for translation and evaluation.

    No shuffling, no filtering, no bucketing: batch `i` holds sentences
    `i * batch_size ...` in their original order, so outputs line up with references.

    Args:
        sources: list of str.
        source_tokenizer: a keras-rnmt tokenizer.
        batch_size: int. Sentences per batch (the last batch may be smaller).
            Defaults to 64.

    Returns:
        A `tf.data.Dataset` of int32 `source_ids` of shape `(batch, source_len)`:
        tokens + `</s>`, padded with 0.

    Example:
    ```python
    for source_ids in make_inference_batches(test_sources, source_tokenizer, 32):
        ...
    ```
    """
    _check_positive_int(batch_size, "batch_size")
    dataset = tf.data.Dataset.from_tensor_slices(_string_tensor(sources, "sources"))

    def encode(strings):
        ids = source_tokenizer.tokenize(strings)
        eos = tf.fill([ids.nrows(), 1], tf.constant(EOS_ID, tf.int32))
        ids = tf.concat([ids, tf.RaggedTensor.from_tensor(eos)], axis=1)
        return ids.to_tensor(default_value=PAD_ID)

    dataset = dataset.batch(batch_size).map(encode, num_parallel_calls=tf.data.AUTOTUNE)
    return without_autotuning(dataset.prefetch(tf.data.AUTOTUNE))
