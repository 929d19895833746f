"""Subword tokenizers wrapping keras-hub: WordPiece and SentencePiece.

Both keep the keras-rnmt special ids (`<pad>`=0, `<unk>`=1, `<s>`=2, `</s>`=3) and the
`WordTokenizer` interface, so models and pipelines do not care which one is used.
Train them on training-side text only.
"""

import base64

import keras
import tensorflow as tf

from keras_rnmt.data.base_tokenizer import (
    SPECIAL_TOKENS,
    UNK_TOKEN,
    Tokenizer,
    with_special_tokens,
)
from keras_rnmt.data.word_tokenizer import WHITESPACE_PATTERN

SENTENCE_PIECE_MODEL_TYPES = ("unigram", "bpe", "word", "char")


def _check_bool(value, argument):
    if not isinstance(value, bool):
        raise ValueError(f"`{argument}` must be True or False. Received: {value!r}")


def _check_vocabulary_size(vocabulary_size):
    if not isinstance(vocabulary_size, int) or vocabulary_size <= len(SPECIAL_TOKENS):
        raise ValueError(
            f"`vocabulary_size` must be an integer > {len(SPECIAL_TOKENS)} (the special tokens "
            f"{list(SPECIAL_TOKENS)} count towards it). Received: vocabulary_size={vocabulary_size!r}"
        )


@keras.saving.register_keras_serializable(package="keras_rnmt")
class WordPieceTokenizer(Tokenizer):
    """WordPiece subwords (`keras_hub.tokenizers.WordPieceTokenizer`) with fixed special ids.

    A word is split greedily into the longest pieces of the vocabulary; pieces after
    the first carry `suffix_indicator` ("walking" -> "walk", "##ing"). A word that
    cannot be covered becomes `<unk>`. `detokenize` merges pieces back into words and
    joins words with single spaces. `tokenize`/`detokenize` are TF graph functions
    returning TF tensors under every Keras backend.

    Args:
        vocabulary: list of str or `None`. WordPiece tokens in id order, without the
            special tokens (prepended), or starting with exactly
            `["<pad>", "<unk>", "<s>", "</s>"]` as `get_vocabulary()` returns. `None`
            (default) until `build_vocabulary()`.
        lowercase: bool. Case-fold the text first. Defaults to `False`.
        split_punctuation: bool. If `True`, punctuation marks become separate words
            before WordPiece; if `False` (default), split on whitespace only.
        suffix_indicator: str. Prefix of non-initial pieces. Defaults to `"##"`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:
    ```python
    tokenizer = WordPieceTokenizer(lowercase=True)
    tokenizer.build_vocabulary(["the walker walks", "walking is fun"], vocabulary_size=60)
    tokenizer.detokenize(tokenizer.tokenize(["The walker walks"]))  # [b"the walker walks"]
    ```

    References:
        - [Schuster and Nakajima, 2012](https://research.google/pubs/pub37842/)
        - [Wu et al., 2016](https://arxiv.org/abs/1609.08144)
    """

    def __init__(
        self,
        vocabulary=None,
        lowercase=False,
        split_punctuation=False,
        suffix_indicator="##",
        **kwargs,
    ):
        super().__init__(**kwargs)
        _check_bool(lowercase, "lowercase")
        _check_bool(split_punctuation, "split_punctuation")
        if not isinstance(suffix_indicator, str) or not suffix_indicator:
            raise ValueError(
                f"`suffix_indicator` must be a non-empty string. Received: {suffix_indicator!r}"
            )
        self.lowercase = lowercase
        self.split_punctuation = split_punctuation
        self.suffix_indicator = suffix_indicator
        import keras_hub  # on use: importing it (and tensorflow_text) costs every process 0.8 s
        self._wordpiece = keras_hub.tokenizers.WordPieceTokenizer(
            vocabulary=None,
            lowercase=lowercase,
            strip_accents=False,
            split=split_punctuation,
            suffix_indicator=suffix_indicator,
            oov_token=UNK_TOKEN,
            dtype="int32",
            name="wordpiece",
        )
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary):
        """Replace the vocabulary (same format as the `vocabulary` argument)."""
        full = with_special_tokens(vocabulary)
        self._wordpiece.set_vocabulary(full)
        self._set_vocabulary_list(full)

    def _words(self, strings):
        if self.split_punctuation:
            return strings
        return tf.strings.split(tf.strings.regex_replace(strings, WHITESPACE_PATTERN, " "))

    def build_vocabulary(self, texts, vocabulary_size=8000):
        """Learn a WordPiece vocabulary from `texts` and set it.

        Uses `keras_hub.tokenizers.compute_word_piece_vocabulary`.

        Args:
            texts: list of str. Training-side text only.
            vocabulary_size: int. Maximum `vocabulary_size()`, the 4 special tokens
                included. Small corpora may give fewer tokens. Defaults to 8000.
        """
        _check_vocabulary_size(vocabulary_size)
        texts = list(texts)
        data = tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string, [len(texts)]))
        data = data.batch(1024).map(self._words)
        import keras_hub
        vocabulary = keras_hub.tokenizers.compute_word_piece_vocabulary(
            data,
            vocabulary_size,
            lowercase=self.lowercase,
            strip_accents=False,
            split=self.split_punctuation,
            suffix_indicator=self.suffix_indicator,
            reserved_tokens=list(SPECIAL_TOKENS),
        )
        self.set_vocabulary(vocabulary)

    def _encode(self, strings):
        return self._wordpiece.tokenize(self._words(strings))

    def _decode(self, ids):
        return self._wordpiece.detokenize(ids)

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": None if self._vocabulary is None else list(self._vocabulary),
                "lowercase": self.lowercase,
                "split_punctuation": self.split_punctuation,
                "suffix_indicator": self.suffix_indicator,
            }
        )
        return config


@keras.saving.register_keras_serializable(package="keras_rnmt")
class SentencePieceTokenizer(Tokenizer):
    """SentencePiece subwords (`keras_hub.tokenizers.SentencePieceTokenizer`).

    Training and the vocabulary come from keras-hub; the graph ops are
    `tensorflow_text.SentencepieceTokenizer` created inside the traced function, so a
    tokenizer survives `keras.utils.clear_session()`.

    The model is a serialized SentencePiece proto whose first four pieces are
    `<pad>`, `<unk>`, `<s>`, `</s>` (what `build_vocabulary` trains). Normalisation
    (NFKC, optional lowercasing) lives inside the proto, so `lowercase` is a training
    option. `detokenize` undoes the segmentation exactly (spaces restored from "▁");
    an `<unk>` piece decodes to " ⁇ ". `tokenize`/`detokenize` are TF graph functions
    returning TF tensors under every Keras backend.

    Args:
        proto: bytes or `None`. The serialized SentencePiece model. `get_config()`
            stores it base64-encoded and `from_config()` decodes it. `None` (default)
            until `build_vocabulary()`.
        **kwargs: standard `keras.layers.Layer` arguments.

    Example:
    ```python
    tokenizer = SentencePieceTokenizer()
    tokenizer.build_vocabulary(texts, vocabulary_size=8000, model_type="bpe")
    ids = tokenizer.tokenize(["a man in a blue shirt ."])
    tokenizer.detokenize(ids)
    ```

    References:
        - [Kudo and Richardson, 2018](https://arxiv.org/abs/1808.06226)
    """

    def __init__(self, proto=None, **kwargs):
        super().__init__(**kwargs)
        import keras_hub
        self._sentencepiece = keras_hub.tokenizers.SentencePieceTokenizer(
            proto=None, dtype="int32", name="sentencepiece"
        )
        self.proto = None
        if proto is not None:
            self.set_proto(proto)

    def set_proto(self, proto):
        """Replace the SentencePiece model (serialized proto `bytes`)."""
        if not isinstance(proto, bytes):
            raise ValueError(
                "`proto` must be the serialized SentencePiece model as bytes (base64 strings "
                f"are accepted by `from_config` only). Received type: {type(proto).__name__}"
            )
        self._sentencepiece.set_proto(proto)
        self._set_vocabulary_list(self._sentencepiece.get_vocabulary())
        self.proto = proto

    def build_vocabulary(self, texts, vocabulary_size=8000, model_type="unigram", lowercase=False):
        """Train a SentencePiece model on `texts` and set it.

        Uses `keras_hub.tokenizers.compute_sentence_piece_proto`, which reserves ids
        0..3 for `<pad>`, `<unk>`, `<s>`, `</s>`.

        Args:
            texts: list of str. Training-side text only.
            vocabulary_size: int. Exact number of pieces, specials included; too large a
                value for the corpus is an error. Defaults to 8000.
            model_type: str. One of `"unigram"` (default), `"bpe"`, `"word"`, `"char"`.
            lowercase: bool. Bake lowercasing into the model. Defaults to `False`.
        """
        _check_vocabulary_size(vocabulary_size)
        _check_bool(lowercase, "lowercase")
        if model_type not in SENTENCE_PIECE_MODEL_TYPES:
            raise ValueError(
                f"`model_type` must be one of {list(SENTENCE_PIECE_MODEL_TYPES)}. "
                f"Received: model_type={model_type!r}"
            )
        texts = list(texts)
        data = tf.data.Dataset.from_tensor_slices(tf.constant(texts, tf.string, [len(texts)]))
        try:
            import keras_hub
            proto = keras_hub.tokenizers.compute_sentence_piece_proto(
                data, vocabulary_size, model_type=model_type, lowercase=lowercase
            )
        except RuntimeError as error:
            raise ValueError(
                f"SentencePiece training failed for vocabulary_size={vocabulary_size}, "
                f"model_type={model_type!r}: {error}"
            ) from error
        self.set_proto(proto)

    def _graph_sentencepiece(self):
        # Built while tracing (`_encode`/`_decode` only run inside the tokenizer's
        # `tf.function`), so the SentencePiece resource belongs to the traced graph. An
        # eagerly built one, like keras-hub's, is destroyed by
        # `keras.utils.clear_session()` under the TensorFlow backend.
        import tensorflow_text as tf_text
        return tf_text.SentencepieceTokenizer(model=self.proto, out_type=tf.int32)

    def _encode(self, strings):
        return self._graph_sentencepiece().tokenize(strings)

    def _decode(self, ids):
        return self._graph_sentencepiece().detokenize(ids)

    def get_config(self):
        config = super().get_config()
        proto = None if self.proto is None else base64.b64encode(self.proto).decode("ascii")
        config.update({"proto": proto})
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("proto"), str):
            config["proto"] = base64.b64decode(config["proto"], validate=True)
        return cls(**config)
