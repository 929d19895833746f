import collections

import keras
import numpy as np
import pytest
import tensorflow as tf
from keras import ops
from toy_pairs import SOURCES, TARGETS, tokenizers

from keras_rnmt.data import make_dataset, make_inference_batches


def batches(dataset):
    """Iterate a training dataset as numpy `(source, target_in, target_out)` triples."""
    return [(np.asarray(s), np.asarray(t_in), np.asarray(t_out)) for (s, t_in), t_out in dataset]


def lengths(array):
    return (array != 0).sum(axis=1)


@pytest.mark.tensorflow_only
def test_element_spec():
    dataset = make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=8)
    spec = tf.TensorSpec(shape=(None, None), dtype=tf.int32)
    assert dataset.element_spec == ((spec, spec), spec)


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("batch_multiple", [1, 2])
def test_pipelines_run_without_autotuning(batch_multiple):
    """Autotuning's model thread made `model.fit` wait up to 60 s at the end of many epochs
    (`without_autotuning`): training, validation and inference batches all turn it off."""
    source_tokenizer, target_tokenizer = tokenizers()
    training = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer, batch_size=8,
                            pad_to_bucket=True, batch_multiple=batch_multiple)
    inference = make_inference_batches(SOURCES, source_tokenizer, 8)
    for dataset in (training, inference):
        assert dataset.options().autotune.enabled is False
    # Nothing else changes: every pair still comes once (filler rows have all-<pad> targets).
    assert sum(int((t_out != 0).any(axis=1).sum()) for _, _, t_out in batches(training)) \
        == len(SOURCES)


def test_examples_are_encoded_with_specials_and_padding():
    source_tokenizer, target_tokenizer = tokenizers()
    sources, targets = (
        ["ka bano boka", "lo cedi dira mi dapu"],
        ["ta hus ser", "se bok tar ru stol"],
    )
    dataset = make_dataset(sources, targets, source_tokenizer, target_tokenizer,
                           batch_size=2, shuffle=False)  # fmt: skip
    [(source, target_in, target_out)] = batches(dataset)
    for array in (source, target_in, target_out):
        assert array.dtype == np.int32
    source_ids = source_tokenizer.tokenize(sources).to_list()
    target_ids = target_tokenizer.tokenize(targets).to_list()
    assert source.tolist() == [source_ids[0] + [3, 0, 0], source_ids[1] + [3]]
    assert target_in.tolist() == [[2] + target_ids[0] + [0, 0], [2] + target_ids[1]]
    assert target_out.tolist() == [target_ids[0] + [3, 0, 0], target_ids[1] + [3]]


def test_every_pair_appears_once_and_batches_are_bucketed():
    source_tokenizer, target_tokenizer = tokenizers()
    dataset = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer,
                           batch_size=16, bucket_width=3)  # fmt: skip
    seen = collections.Counter()
    sizes = []
    for source, target_in, target_out in batches(dataset):
        source_lengths = lengths(source)
        assert source_lengths.max() - source_lengths.min() < 3
        assert source.shape[1] == source_lengths.max()  # padded to the longest only
        assert source.shape[0] <= 16
        assert (target_in[:, 0] == 2).all()
        sizes.append(source.shape[0])
        decoded_sources = source_tokenizer.detokenize(source).numpy().tolist()
        decoded_targets = target_tokenizer.detokenize(target_out).numpy().tolist()
        seen.update((s.decode(), t.decode()) for s, t in zip(decoded_sources, decoded_targets))
    assert seen == collections.Counter(zip(SOURCES, TARGETS))
    assert max(sizes) == 16


def test_drop_remainder_gives_full_batches():
    dataset = make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=16, drop_remainder=True)
    sizes = {source.shape[0] for source, _, _ in batches(dataset)}
    assert sizes == {16}


@pytest.mark.parametrize("pad_to_bucket", [False, True])
def test_batch_multiple_fills_up_batches_and_drops_nothing(pad_to_bucket):
    """The same batches as without `batch_multiple`, each followed by filler rows up to a
    multiple of 4: copies of its first sources with all-<pad> targets."""
    def make(**kwargs):
        return batches(make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=16,
                                    bucket_width=3, pad_to_bucket=pad_to_bucket, **kwargs))

    plain, filled = make(), make(batch_multiple=4)
    assert len(filled) == len(plain)
    fillers = 0
    for original, batch in zip(plain, filled):
        size = original[0].shape[0]
        assert batch[0].shape[0] % 4 == 0 and size <= batch[0].shape[0] < size + 4
        for part, filled_part in zip(original, batch):
            np.testing.assert_array_equal(filled_part[:size], part)
        extra = batch[0].shape[0] - size
        fillers += extra
        np.testing.assert_array_equal(batch[0][size:], original[0][np.arange(extra) % size])
        assert not batch[1][size:].any() and not batch[2][size:].any()
    assert fillers > 0


@pytest.mark.parametrize("pad_to_bucket", [False, True])
def test_batch_multiple_with_token_batches_keeps_the_budget(pad_to_bucket):
    """Token batches for 4 devices: each holds a multiple of 4 sentences within the budget
    (a bucket's sentence count is rounded down to a multiple of 4, so filling up its last
    batch cannot break the budget), filler rows come last, and the real rows hold every pair
    once."""
    source_tokenizer, target_tokenizer = tokenizers()
    dataset = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer,
                           batch_size=120, batch_by="tokens", bucket_width=4,
                           pad_to_bucket=pad_to_bucket, batch_multiple=4)
    seen, sizes, fillers = collections.Counter(), set(), 0
    for source, target_in, target_out in batches(dataset):
        size = source.shape[0]
        assert size % 4 == 0
        assert size * max(source.shape[1], target_in.shape[1]) <= 120
        real = lengths(target_out) > 0
        assert real[:real.sum()].all()  # filler rows (all-<pad> targets) only at the end
        fillers += size - real.sum()
        sizes.add(size)
        decoded_sources = source_tokenizer.detokenize(source[real]).numpy().tolist()
        decoded_targets = target_tokenizer.detokenize(target_out[real]).numpy().tolist()
        seen.update((s.decode(), t.decode()) for s, t in zip(decoded_sources, decoded_targets))
    assert seen == collections.Counter(zip(SOURCES, TARGETS))
    assert fillers > 0
    # 120 tokens hold 15 sentences of 8 tokens, rounded down to 12.
    assert 12 in sizes and not sizes & {13, 14, 15}


def test_batch_multiple_must_be_a_positive_int():
    with pytest.raises(ValueError, match="`batch_multiple` must be a positive integer"):
        make_dataset(SOURCES, TARGETS, *tokenizers(), batch_multiple=0)


def test_seed_reproducibility_and_reshuffling():
    source_tokenizer, target_tokenizer = tokenizers()

    def first_epochs(seed, epochs=2):
        dataset = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer,
                               batch_size=16, seed=seed)  # fmt: skip
        return [[source.tolist() for source, _, _ in batches(dataset)] for _ in range(epochs)]

    first, again, other = first_epochs(1), first_epochs(1), first_epochs(2)
    assert first == again
    assert first != other
    assert first[0] != first[1]  # a new order every epoch


def incomplete_batch_positions(**kwargs):
    """Where in each of two epochs the batches of fewer than 16 sentences come."""
    dataset = make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=16, bucket_width=1,
                           pad_to_bucket=True, seed=3, **kwargs)  # fmt: skip
    epochs = []
    for _ in range(2):
        sizes = [source.shape[0] for source, _, _ in batches(dataset)]
        epochs.append(([i for i, size in enumerate(sizes) if size < 16], len(sizes)))
    return epochs


def test_unshuffled_batches_end_every_epoch_with_the_incomplete_ones():
    """Bucketing holds each bucket's last batch back to the end of the pass (the order of
    the runs recorded until 2026-11-29, `shuffle_batches=False`)."""
    for positions, count in incomplete_batch_positions(shuffle_batches=False):
        assert len(positions) >= 8  # one per length bucket that does not divide evenly
        assert positions == list(range(count - len(positions), count))


def test_shuffled_batches_spread_the_incomplete_ones_over_the_epoch():
    """The updates just before validation are no longer the small, length-ordered ones."""
    (first, count), (second, _) = incomplete_batch_positions()
    assert len(first) == len(second) >= 8
    for positions in (first, second):
        assert positions != list(range(count - len(positions), count))
        assert min(positions) < count // 2  # some come in the first half of the epoch
    assert first != second  # a new order every epoch


def test_without_shuffle_the_batches_keep_their_order():
    source_tokenizer, target_tokenizer = tokenizers()
    orders = [
        [source.tolist() for source, _, _ in batches(make_dataset(
            SOURCES, TARGETS, source_tokenizer, target_tokenizer, batch_size=16, shuffle=False,
            shuffle_batches=shuffle_batches, seed=seed))]
        for shuffle_batches, seed in ((True, 0), (False, 0), (True, 1))
    ]  # fmt: skip
    assert orders[0] == orders[1] == orders[2]


def test_batch_by_tokens_respects_budget():
    dataset = make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=120, batch_by="tokens",
                           bucket_width=4)  # fmt: skip
    sizes, total = [], 0
    for source, target_in, target_out in batches(dataset):
        assert source.shape[0] * max(source.shape[1], target_in.shape[1]) <= 120
        assert target_in.shape == target_out.shape
        source_lengths, target_lengths = lengths(source), lengths(target_out)
        assert source_lengths.max() - source_lengths.min() < 4
        assert target_lengths.max() - target_lengths.min() < 4
        sizes.append(source.shape[0])
        total += source.shape[0]
    assert total == len(SOURCES)
    assert max(sizes) > 1


# Width 1 is the Multi30k recipe's: every batch padded to exactly its longest sentence.
@pytest.mark.parametrize("bucket_width", [4, 1])
@pytest.mark.parametrize("batch_by, batch_size", [("sentences", 16), ("tokens", 120)])
def test_pad_to_bucket_gives_static_bucket_shapes(batch_by, batch_size, bucket_width):
    source_tokenizer, target_tokenizer = tokenizers()
    dataset = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer,
                           batch_size=batch_size, batch_by=batch_by, bucket_width=bucket_width,
                           pad_to_bucket=True)  # fmt: skip
    shapes, seen = set(), collections.Counter()
    for source, target_in, target_out in batches(dataset):
        width = source.shape[1]
        assert width % bucket_width == 0
        assert source.shape == target_in.shape == target_out.shape
        longest = max(lengths(source).max(), lengths(target_in).max())
        assert width - bucket_width < longest <= width  # the bucket's upper bound
        if batch_by == "tokens":
            assert source.shape[0] * width <= batch_size
        shapes.add(width)
        decoded_sources = source_tokenizer.detokenize(source).numpy().tolist()
        decoded_targets = target_tokenizer.detokenize(target_out).numpy().tolist()
        seen.update((s.decode(), t.decode()) for s, t in zip(decoded_sources, decoded_targets))
    assert seen == collections.Counter(zip(SOURCES, TARGETS))
    # lengths 2..16 with </s>: buckets 4, 8, 12, 16 (and 20) at width 4, one per length at 1
    assert len(shapes) <= 20 // bucket_width


def test_max_length_guard_drops_long_pairs():
    dataset = make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=64, max_length=5)
    kept = sum(source.shape[0] for source, _, _ in batches(dataset))
    expected = sum(len(s.split()) <= 5 and len(t.split()) <= 5 for s, t in zip(SOURCES, TARGETS))
    assert 0 < kept == expected < len(SOURCES)


def test_repeat_continues_past_one_epoch():
    dataset = make_dataset(SOURCES, TARGETS, *tokenizers(), batch_size=64, repeat=True)
    assert sum(source.shape[0] for source, _, _ in batches(dataset.take(20))) > len(SOURCES)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"batch_by": "words"},
         "`batch_by` must be one of ['sentences', 'tokens']. Received: batch_by='words'"),
        ({"batch_size": 0}, "`batch_size` must be a positive integer. Received: batch_size=0"),
        ({"bucket_width": 0}, "`bucket_width` must be a positive integer. Received: bucket_width=0"),
    ],
)  # fmt: skip
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as info:
        make_dataset(SOURCES, TARGETS, *tokenizers(), **kwargs)
    assert str(info.value) == message


def test_empty_and_non_string_corpora():
    with pytest.raises(ValueError) as info:
        make_dataset([], [], *tokenizers())
    assert str(info.value) == "`sources` is empty: there is nothing to train on"
    with pytest.raises(ValueError) as info:
        make_dataset(["a b", 3], ["c d", "e"], *tokenizers())
    assert str(info.value) == "`sources` must be a list of str; sources[1] is int: 3"
    # A lone string once made a corpus of its characters.
    with pytest.raises(TypeError) as info:
        make_dataset(["a b"], "c d", *tokenizers())
    assert str(info.value) == ("`targets` must be a list of sentences, not one str: 'c d' (for "
                               "one sentence, pass [sentence])")


def test_mismatched_lengths():
    with pytest.raises(ValueError) as info:
        make_dataset(SOURCES, TARGETS[:-1], *tokenizers())
    assert str(info.value) == (
        "`sources` and `targets` must have the same length. Received: 400 sources, 399 targets"
    )


def test_inference_batches_keep_order_and_everything():
    source_tokenizer, _ = tokenizers()
    sources = ["ka bano boka", "", "lo cedi dira mi dapu", "unknown words here"]
    result = [np.asarray(batch) for batch in make_inference_batches(sources, source_tokenizer, 3)]
    assert [batch.shape for batch in result] == [(3, 6), (1, 4)]
    assert result[0].dtype == np.int32
    ids = source_tokenizer.tokenize(sources).to_list()
    assert result[0].tolist() == [ids[0] + [3, 0, 0], [3, 0, 0, 0, 0, 0], ids[2] + [3]]
    assert result[1].tolist() == [[1, 1, 1, 3]]


def test_model_fit_on_dataset():
    """`model.fit` consumes the dataset under every backend."""
    source_tokenizer, target_tokenizer = tokenizers()
    vocabulary = target_tokenizer.vocabulary_size()
    source_ids = keras.Input(shape=(None,), dtype="int32")
    target_in = keras.Input(shape=(None,), dtype="int32")
    source = keras.layers.Embedding(source_tokenizer.vocabulary_size(), 8)(source_ids)
    context = keras.layers.GlobalAveragePooling1D()(source)  # batch x 8
    target = keras.layers.Embedding(vocabulary, 8)(target_in)  # batch x T x 8
    hidden = keras.layers.Lambda(lambda x: x[0] + ops.expand_dims(x[1], 1))([target, context])
    logits = keras.layers.Dense(vocabulary)(hidden)  # batch x T x V
    model = keras.Model([source_ids, target_in], logits)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    dataset = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer,
                           batch_size=32, repeat=True)  # fmt: skip
    history = model.fit(dataset, steps_per_epoch=2, epochs=1, shuffle=False, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    assert history.history["loss"][0] > 0


def test_pad_to_bucket_gives_one_static_shape_per_bucket():
    from keras_rnmt.data import build_tokenizer, make_dataset

    sources = [" ".join(["a"] * n) for n in range(1, 30)]
    targets = [" ".join(["b"] * (n + 2)) for n in range(1, 30)]
    src_tok = build_tokenizer("word", sources, min_frequency=1)
    tgt_tok = build_tokenizer("word", targets, min_frequency=1)
    dataset = make_dataset(
        sources,
        targets,
        src_tok,
        tgt_tok,
        batch_size=4,
        bucket_width=8,
        pad_to_bucket=True,
        shuffle=False,
    )
    shapes = set()
    for (source, target_in), target_out in dataset:
        assert source.shape[1] == target_in.shape[1] == target_out.shape[1]
        assert source.shape[1] % 8 == 0
        shapes.add(int(source.shape[1]))
    assert shapes == {8, 16, 24, 32}  # target lengths 4..32 (+1 special): 4 buckets
