import numpy as np
import pytest
import tensorflow as tf

from keras_rnmt.data import WordTokenizer, load_tokenizer
from keras_rnmt.data.base_tokenizer import SPECIAL_TOKENS

TEXTS = ["the cat sat", "the dog sat", "a cat ran", "the end"]
# the:3, cat:2, sat:2, a:1, dog:1, end:1, ran:1 -> frequency desc, then word asc.
EXPECTED_WORDS = ["the", "cat", "sat", "a", "dog", "end", "ran"]


def built(**kwargs):
    tokenizer = WordTokenizer(**kwargs)
    tokenizer.build_vocabulary(TEXTS)
    return tokenizer


def as_list(ragged):
    assert isinstance(ragged, tf.RaggedTensor)
    assert ragged.dtype == tf.int32
    return ragged.to_list()


def test_special_tokens_and_ids():
    tokenizer = built()
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == (0, 1, 2, 3)
    assert tokenizer.get_vocabulary()[:4] == ["<pad>", "<unk>", "<s>", "</s>"]
    assert [tokenizer.token_to_id(token) for token in SPECIAL_TOKENS] == [0, 1, 2, 3]
    assert tokenizer.id_to_token(3) == "</s>"


def test_build_vocabulary_orders_by_frequency_then_word():
    tokenizer = built()
    assert tokenizer.get_vocabulary() == list(SPECIAL_TOKENS) + EXPECTED_WORDS
    assert tokenizer.vocabulary_size() == 11
    # The order of the texts does not matter.
    reversed_tokenizer = WordTokenizer()
    reversed_tokenizer.build_vocabulary(TEXTS[::-1])
    assert reversed_tokenizer.get_vocabulary() == tokenizer.get_vocabulary()


def test_build_vocabulary_caps_by_size_and_frequency():
    tokenizer = WordTokenizer()
    tokenizer.build_vocabulary(TEXTS, max_size=6)
    assert tokenizer.get_vocabulary() == list(SPECIAL_TOKENS) + ["the", "cat"]
    tokenizer.build_vocabulary(TEXTS, min_frequency=2)
    assert tokenizer.get_vocabulary() == list(SPECIAL_TOKENS) + ["the", "cat", "sat"]
    tokenizer.build_vocabulary(TEXTS, max_size=5, min_frequency=2)
    assert tokenizer.get_vocabulary() == list(SPECIAL_TOKENS) + ["the"]


def test_build_vocabulary_ignores_special_tokens_in_text():
    tokenizer = WordTokenizer()
    tokenizer.build_vocabulary(["<unk> x </s> x"])
    assert tokenizer.get_vocabulary() == list(SPECIAL_TOKENS) + ["x"]


def test_build_vocabulary_bad_arguments():
    tokenizer = WordTokenizer()
    with pytest.raises(ValueError) as info:
        tokenizer.build_vocabulary(TEXTS, max_size=4)
    assert str(info.value) == (
        "`max_size` must be None or an integer > 4 (the special tokens "
        "['<pad>', '<unk>', '<s>', '</s>'] count towards it). Received: max_size=4"
    )
    with pytest.raises(
        ValueError, match=r"`min_frequency` must be an integer >= 1\. Received: min_frequency=0"
    ):
        tokenizer.build_vocabulary(TEXTS, min_frequency=0)


def test_vocabulary_argument_with_or_without_specials():
    plain = WordTokenizer(vocabulary=["x", "y"])
    assert plain.get_vocabulary() == list(SPECIAL_TOKENS) + ["x", "y"]
    again = WordTokenizer(vocabulary=plain.get_vocabulary())
    assert again.get_vocabulary() == plain.get_vocabulary()


@pytest.mark.parametrize(
    "vocabulary, message",
    [
        (["x", "</s>"], "`vocabulary` may contain the special tokens ['<pad>', '<unk>', '<s>', '</s>'] "
         "only as its first four entries, in that order. Received: '</s>' at index 1"),
        (["x", "y", "x"], "`vocabulary` contains 'x' twice"),
        (["x", ""], "`vocabulary` must hold non-empty strings. Received: '' at index 1"),
    ],
)  # fmt: skip
def test_bad_vocabulary(vocabulary, message):
    with pytest.raises(ValueError) as info:
        WordTokenizer(vocabulary=vocabulary)
    assert str(info.value) == message


def test_bad_ids_name_the_range_and_the_shape():
    tokenizer = WordTokenizer(vocabulary=list(SPECIAL_TOKENS) + ["x", "y"])
    with pytest.raises(ValueError) as info:
        tokenizer.id_to_token(6)
    assert str(info.value) == "`id` must be in [0, 5]. Received: id=6"
    with pytest.raises(ValueError) as info:
        tokenizer.detokenize(4)
    assert str(info.value) == "`ids` must be 1-D or 2-D. Received a scalar: 4"
    with pytest.raises(ValueError) as info:
        tokenizer.detokenize(np.zeros((1, 2, 3), "int32"))
    assert str(info.value).startswith("`ids` must be 1-D or 2-D. Received shape: (1, ")
    assert tokenizer.detokenize([[4, 5], [5]]).numpy().tolist() == [b"x y", b"y"]


def test_bad_flag():
    with pytest.raises(ValueError, match=r"`lowercase` must be True or False\. Received: 'yes'"):
        WordTokenizer(lowercase="yes")


def test_tokenize_batch_scalar_and_unknown_words():
    tokenizer = built()
    assert as_list(tokenizer.tokenize(["the cat sat", "a zebra  ran", ""])) == [
        [4, 5, 6],
        [7, 1, 10],
        [],
    ]
    scalar = tokenizer.tokenize("the dog")
    assert isinstance(scalar, tf.Tensor) and scalar.dtype == tf.int32
    assert scalar.numpy().tolist() == [4, 8]
    assert as_list(tokenizer.tokenize(np.array(["the end"]))) == [[4, 9]]
    assert as_list(tokenizer(["the end"])) == [[4, 9]]


def test_tokenize_rank_error():
    with pytest.raises(
        ValueError, match=r"a scalar string or a 1-D batch of strings\. Received shape: \(1, 1\)"
    ):
        built().tokenize([["the"]])


def test_empty_tokenizer_error():
    with pytest.raises(ValueError) as info:
        WordTokenizer().tokenize("x")
    assert str(info.value) == (
        "WordTokenizer has no vocabulary yet. Pass one to the constructor or call "
        "`build_vocabulary(texts)` first."
    )


def test_round_trip_lowercase_and_punctuation():
    tokenizer = WordTokenizer(lowercase=True, split_punctuation=True)
    texts = ["Hello, world!", "  Über  DIE Straße...\tja"]
    tokenizer.build_vocabulary(texts)
    words = tokenizer.split_words(texts).to_list()
    assert [[w.decode() for w in row] for row in words] == [
        ["hello", ",", "world", "!"],
        ["über", "die", "straße", ".", ".", ".", "ja"],
    ]
    decoded = tokenizer.detokenize(tokenizer.tokenize(texts)).numpy().tolist()
    assert decoded == [b"hello , world !", "über die straße . . . ja".encode()]


def test_round_trip_whitespace_only_split():
    tokenizer = WordTokenizer()
    texts = ["a man , in a   hat .", "Zwei\u00a0Männer"]
    tokenizer.build_vocabulary(texts)
    decoded = tokenizer.detokenize(tokenizer.tokenize(texts)).numpy().tolist()
    assert decoded == [b"a man , in a hat .", "Zwei Männer".encode()]


def test_detokenize_strips_specials_and_stops_at_eos():
    tokenizer = built()
    padded = np.array([[2, 4, 5, 3, 6, 0], [4, 1, 0, 0, 0, 0], [3, 4, 0, 0, 0, 0]])
    expected = [b"the cat", b"the <unk>", b""]
    assert tokenizer.detokenize(padded).numpy().tolist() == expected
    assert tokenizer.detokenize(tf.constant(padded)).numpy().tolist() == expected
    ragged = tf.ragged.constant([[2, 4, 5, 3, 6], [4, 1], [3, 4]])
    assert tokenizer.detokenize(ragged).numpy().tolist() == expected
    assert tokenizer.detokenize([[4, 6, 3], [7]]).numpy().tolist() == [b"the sat", b"a"]
    single = tokenizer.detokenize([2, 7, 10, 3, 0])
    assert single.shape == () and single.numpy() == b"a ran"


def test_tokens_for_heatmap_labels():
    tokenizer = built()
    assert tokenizer.tokens([2, 4, 5, 3, 0]) == ["<s>", "the", "cat", "</s>", "<pad>"]
    assert tokenizer.tokens(np.array([[4, 3], [5, 3]])) == [["the", "</s>"], ["cat", "</s>"]]
    assert tokenizer.token_to_id("zebra") == 1
    with pytest.raises(ValueError, match=r"`id` must be in \[0, 10\]\. Received: id=11"):
        tokenizer.id_to_token(11)


def test_config_round_trip():
    tokenizer = built(lowercase=True, split_punctuation=True, name="source_tokenizer")
    config = tokenizer.get_config()
    assert config["vocabulary"] == tokenizer.get_vocabulary()
    assert (config["lowercase"], config["split_punctuation"]) == (True, True)
    restored = WordTokenizer.from_config(config)
    assert restored.name == "source_tokenizer"
    assert restored.get_config() == config
    text = ["The cat, a dog."]
    assert as_list(restored.tokenize(text)) == as_list(tokenizer.tokenize(text))


def test_save_and_load(tmp_path):
    tokenizer = built(lowercase=True)
    path = tmp_path / "tokenizer.json"
    tokenizer.save(path)
    restored = load_tokenizer(path)
    assert type(restored) is WordTokenizer
    assert restored.get_vocabulary() == tokenizer.get_vocabulary()
    assert restored.lowercase is True
    assert as_list(restored.tokenize(["The CAT ran"])) == [[4, 5, 10]]


def test_works_in_tf_data_and_tf_function():
    # Under every backend: tokenize/detokenize are TF graph code.
    tokenizer = built()
    dataset = tf.data.Dataset.from_tensor_slices(["the cat", "a dog ran"]).map(tokenizer.tokenize)
    assert [ids.numpy().tolist() for ids in dataset] == [[4, 5], [7, 8, 10]]
    batched = tf.data.Dataset.from_tensor_slices(["the cat", "a"]).batch(2)
    batched = batched.map(lambda s: tokenizer.detokenize(tokenizer.tokenize(s).to_tensor()))
    assert next(iter(batched)).numpy().tolist() == [b"the cat", b"a"]

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def encode(strings):
        return tokenizer.tokenize(strings).to_tensor()

    assert encode(tf.constant(["the end", "a"])).numpy().tolist() == [[4, 9], [7, 0]]


@pytest.mark.tensorflow_only
def test_saved_model_round_trip(tmp_path):
    tokenizer = built()
    module = tf.Module()
    module.tokenizer = tokenizer
    module.encode = tf.function(
        lambda strings: tokenizer.tokenize(strings).to_tensor(),
        input_signature=[tf.TensorSpec([None], tf.string)],
    )
    tf.saved_model.save(module, str(tmp_path / "exported"))
    del module
    restored = tf.saved_model.load(str(tmp_path / "exported"))
    assert restored.encode(tf.constant(["the dog sat", "zebra"])).numpy().tolist() == [
        [4, 8, 6],
        [1, 0, 0],
    ]
