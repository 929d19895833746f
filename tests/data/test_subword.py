import json

import numpy as np
import pytest
import tensorflow as tf

from keras_rnmt.data import (
    SentencePieceTokenizer,
    WordPieceTokenizer,
    WordTokenizer,
    build_tokenizer,
    load_tokenizer,
)
from keras_rnmt.data.base_tokenizer import SPECIAL_TOKENS
from keras_rnmt.datasets import toy_translation

SOURCES, _ = toy_translation(300, seed=3)
SPECIALS = list(SPECIAL_TOKENS)


@pytest.fixture(scope="module")
def wordpiece():
    tokenizer = WordPieceTokenizer()
    tokenizer.build_vocabulary(SOURCES, vocabulary_size=60)
    return tokenizer


@pytest.fixture(scope="module")
def sentencepiece():
    tokenizer = SentencePieceTokenizer()
    tokenizer.build_vocabulary(SOURCES, vocabulary_size=60)
    return tokenizer


def round_trip(tokenizer, texts):
    ids = tokenizer.tokenize(texts)
    assert isinstance(ids, tf.RaggedTensor) and ids.dtype == tf.int32
    return [text.decode() for text in tokenizer.detokenize(ids).numpy().tolist()]


@pytest.mark.parametrize("name", ["wordpiece", "sentencepiece"])
def test_special_ids_and_vocabulary_size(request, name):
    tokenizer = request.getfixturevalue(name)
    assert tokenizer.get_vocabulary()[:4] == SPECIALS
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2, 3)
    assert [tokenizer.token_to_id(token) for token in SPECIALS] == [0, 1, 2, 3]
    assert tokenizer.vocabulary_size() == len(tokenizer.get_vocabulary())
    assert 40 < tokenizer.vocabulary_size() <= 60
    ids = tokenizer.tokenize(SOURCES[:50]).flat_values.numpy()
    assert ids.min() >= 4 and ids.max() < tokenizer.vocabulary_size()


@pytest.mark.parametrize("name", ["wordpiece", "sentencepiece"])
def test_round_trip(request, name):
    tokenizer = request.getfixturevalue(name)
    assert round_trip(tokenizer, SOURCES[:40]) == SOURCES[:40]
    # Pieces really are subwords: at least one word splits into several ids.
    words = SOURCES[0].split()
    assert tokenizer.tokenize(SOURCES[:1]).row_lengths().numpy()[0] > len(words)


@pytest.mark.parametrize("name", ["wordpiece", "sentencepiece"])
def test_detokenize_strips_specials_and_stops_at_eos(request, name):
    tokenizer = request.getfixturevalue(name)
    ids = tokenizer.tokenize(SOURCES[:2]).to_list()
    padded = np.zeros((2, max(map(len, ids)) + 4), dtype="int32")
    padded[0, : len(ids[0]) + 3] = [2] + ids[0] + [3, ids[0][0]]
    padded[1, : len(ids[1]) + 1] = ids[1] + [3]
    decoded = tokenizer.detokenize(padded).numpy().tolist()
    assert [text.decode() for text in decoded] == SOURCES[:2]
    assert tokenizer.detokenize(ids[0] + [3]).numpy().decode() == SOURCES[0]


def test_wordpiece_unknown_and_scalar(wordpiece):
    scalar = wordpiece.tokenize(SOURCES[0])
    assert isinstance(scalar, tf.Tensor) and scalar.dtype == tf.int32
    assert scalar.numpy().tolist() == wordpiece.tokenize([SOURCES[0]]).to_list()[0]
    # "q" never occurs in the toy language: the whole word becomes <unk>.
    assert round_trip(wordpiece, ["ka qqq"]) == ["ka <unk>"]
    assert wordpiece.tokens(wordpiece.tokenize("ka qqq")) == ["ka", "<unk>"]


def test_wordpiece_lowercase_and_punctuation():
    tokenizer = WordPieceTokenizer(lowercase=True, split_punctuation=True)
    tokenizer.build_vocabulary(["Hello, world!", "hello there, world"], vocabulary_size=40)
    assert tokenizer.get_vocabulary()[:4] == SPECIALS
    assert round_trip(tokenizer, ["HELLO,  World!"]) == ["hello , world !"]
    whitespace_only = WordPieceTokenizer(lowercase=True)
    whitespace_only.build_vocabulary(["Hello, world!", "hello there, world"], vocabulary_size=40)
    assert round_trip(whitespace_only, ["HELLO,  World!"]) == ["hello, world!"]


def test_wordpiece_fixed_vocabulary_pieces():
    tokenizer = WordPieceTokenizer(vocabulary=["walk", "talk", "##ing", "##s"])
    assert tokenizer.get_vocabulary() == SPECIALS + ["walk", "talk", "##ing", "##s"]
    assert tokenizer.tokenize(["walking talks walk"]).to_list() == [[4, 6, 5, 7, 4]]
    assert round_trip(tokenizer, ["walking talks"]) == ["walking talks"]


def test_sentencepiece_lowercase_and_unknown():
    tokenizer = SentencePieceTokenizer()
    tokenizer.build_vocabulary(["Hello World", "hello there"] * 5, vocabulary_size=20,
                               model_type="char", lowercase=True)  # fmt: skip
    assert tokenizer.get_vocabulary()[:4] == SPECIALS
    assert round_trip(tokenizer, ["HELLO   world"]) == ["hello world"]
    assert tokenizer.tokenize(["z"]).to_list() == [[tokenizer.token_to_id("▁"), 1]]


def test_sentencepiece_bad_arguments():
    tokenizer = SentencePieceTokenizer()
    with pytest.raises(ValueError) as info:
        tokenizer.build_vocabulary(SOURCES, model_type="wordpiece")
    assert str(info.value) == (
        "`model_type` must be one of ['unigram', 'bpe', 'word', 'char']. "
        "Received: model_type='wordpiece'"
    )
    with pytest.raises(ValueError, match=r"SentencePiece training failed for vocabulary_size=5000"):
        tokenizer.build_vocabulary(SOURCES[:10], vocabulary_size=5000)
    with pytest.raises(
        ValueError, match=r"`proto` must be the serialized SentencePiece model as bytes"
    ):
        SentencePieceTokenizer(proto="model.spm")
    with pytest.raises(ValueError, match=r"`vocabulary_size` must be an integer > 4"):
        WordPieceTokenizer().build_vocabulary(SOURCES, vocabulary_size=3)


@pytest.mark.parametrize("name", ["wordpiece", "sentencepiece"])
def test_config_and_save_round_trip(request, tmp_path, name):
    tokenizer = request.getfixturevalue(name)
    config = tokenizer.get_config()
    json.dumps(config)  # JSON-serialisable: the proto is base64 text.
    restored = type(tokenizer).from_config(config)
    assert restored.get_config() == config
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    loaded = load_tokenizer(path)
    assert type(loaded) is type(tokenizer)
    assert loaded.get_vocabulary() == tokenizer.get_vocabulary()
    for other in (restored, loaded):
        assert other.tokenize(SOURCES[:5]).to_list() == tokenizer.tokenize(SOURCES[:5]).to_list()


@pytest.mark.parametrize("name", ["wordpiece", "sentencepiece"])
def test_in_tf_data(request, name):
    tokenizer = request.getfixturevalue(name)
    dataset = tf.data.Dataset.from_tensor_slices(SOURCES[:3]).map(tokenizer.tokenize)
    expected = tokenizer.tokenize(SOURCES[:3]).to_list()
    assert [ids.numpy().tolist() for ids in dataset] == expected


@pytest.mark.parametrize(
    "kind, options, cls",
    [
        ("word", {"lowercase": True, "max_size": 50}, WordTokenizer),
        ("wordpiece", {"vocabulary_size": 50}, WordPieceTokenizer),
        ("sentencepiece", {"vocabulary_size": 50, "model_type": "bpe"}, SentencePieceTokenizer),
    ],
)
def test_build_tokenizer(kind, options, cls):
    tokenizer = build_tokenizer(kind, SOURCES, **options)
    assert type(tokenizer) is cls
    assert tokenizer.get_vocabulary()[:4] == SPECIALS
    assert tokenizer.vocabulary_size() <= 50
    assert round_trip(tokenizer, SOURCES[:5]) == SOURCES[:5]


def test_build_tokenizer_errors():
    with pytest.raises(ValueError) as info:
        build_tokenizer("bpe", SOURCES)
    assert str(info.value) == (
        "`kind` must be one of ['word', 'wordpiece', 'sentencepiece']. Received: kind='bpe'"
    )
    with pytest.raises(ValueError) as info:
        build_tokenizer("word", SOURCES, vocabulary_size=100)
    assert str(info.value) == (
        "Unknown option(s) ['vocabulary_size'] for kind='word'. Valid options: "
        "['lowercase', 'max_size', 'min_frequency', 'split_punctuation']"
    )


def test_load_tokenizer_errors(tmp_path):
    path = tmp_path / "other.json"
    path.write_text(json.dumps({"format": "something-else"}))
    with pytest.raises(ValueError, match=r"is not a keras-rnmt tokenizer file"):
        load_tokenizer(path)
    path.write_text(
        json.dumps({"format": "keras_rnmt.tokenizer", "version": 1, "class_name": "Bpe"})
    )
    with pytest.raises(ValueError) as info:
        load_tokenizer(path)
    assert str(info.value) == (
        f"{path} holds class_name='Bpe'; expected one of "
        "['WordTokenizer', 'WordPieceTokenizer', 'SentencePieceTokenizer']"
    )
    path.write_bytes(b'{"format": "keras_rnmt.tokenizer", "x": "\xff"}')
    with pytest.raises(ValueError) as info:
        load_tokenizer(path)
    assert str(info.value) == f"{path} is not a keras-rnmt tokenizer file: invalid UTF-8 at byte 42"
    path.write_text(json.dumps({"format": "keras_rnmt.tokenizer", "version": 99}))
    with pytest.raises(ValueError, match=r"has tokenizer file version 99; this keras-rnmt reads"):
        load_tokenizer(path)
