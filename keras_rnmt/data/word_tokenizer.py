"""Word-level tokenizer on `keras.layers.StringLookup`."""

import collections

import keras
import tensorflow as tf

from keras_rnmt.data.base_tokenizer import (
    PAD_TOKEN,
    SPECIAL_TOKENS,
    UNK_TOKEN,
    Tokenizer,
    with_special_tokens,
)

# Unicode punctuation (general category P): "Hello, world!" -> "Hello , world !".
PUNCTUATION_PATTERN = r"(\pP)"
# ASCII whitespace plus Unicode separators (no-break space, em space, ...).
WHITESPACE_PATTERN = r"[\s\p{Z}]+"


@keras.saving.register_keras_serializable(package="keras_rnmt")
class WordTokenizer(Tokenizer):
    """A word-level tokenizer: whitespace (and optionally punctuation) splitting.

    Words are looked up in a `keras.layers.StringLookup`; unknown words map to
    `<unk>`. Ids 0..3 are always `<pad>`, `<unk>`, `<s>`, `</s>`, followed by the
    words of the vocabulary. `tokenize` and `detokenize` are TensorFlow graph
    functions under every Keras backend: they run inside `tf.data` and return TF
    tensors.

    Normalisation, applied identically by `tokenize` and `build_vocabulary`: optional
    Unicode lowercasing, optional splitting of punctuation from words, then splitting
    on runs of whitespace. `detokenize(tokenize(x))` therefore gives the normalised
    text (single spaces) when every word is in the vocabulary.

    Args:
        vocabulary: list of str or `None`. The words, in id order, without the special
            tokens (they are prepended). A list that starts with exactly
            `["<pad>", "<unk>", "<s>", "</s>"]`, as `get_vocabulary()` returns, is also
            accepted. `None` (default) leaves the tokenizer empty until
            `build_vocabulary()` is called.
        lowercase: bool. Lowercase (Unicode-aware) before splitting. Defaults to `False`.
        split_punctuation: bool. If `True`, every Unicode punctuation character becomes
            its own token ("Hello, world!" -> "Hello , world !"). If `False` (default),
            split on whitespace only: right for pre-tokenised text such as Multi30k's
            `lc.norm.tok` files.
        **kwargs: standard `keras.layers.Layer` arguments (`name`, ...).

    Example:
    ```python
    tokenizer = WordTokenizer(lowercase=True, split_punctuation=True)
    tokenizer.build_vocabulary(["Hello, world!", "hello again"])
    ids = tokenizer.tokenize(["Hello, world!"])  # tf.RaggedTensor [[4, 6, 7, 5]]
    tokenizer.detokenize(ids)  # tf.Tensor([b"hello , world !"])
    ```
    """

    def __init__(self, vocabulary=None, lowercase=False, split_punctuation=False, **kwargs):
        super().__init__(**kwargs)
        for argument, value in (("lowercase", lowercase), ("split_punctuation", split_punctuation)):
            if not isinstance(value, bool):
                raise ValueError(f"`{argument}` must be True or False. Received: {value!r}")
        self.lowercase = lowercase
        self.split_punctuation = split_punctuation
        self._lookup = keras.layers.StringLookup(
            mask_token=PAD_TOKEN, oov_token=UNK_TOKEN, num_oov_indices=1, name="lookup"
        )
        self._inverse_lookup = keras.layers.StringLookup(
            mask_token=PAD_TOKEN, oov_token=UNK_TOKEN, invert=True, name="inverse_lookup"
        )
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def set_vocabulary(self, vocabulary):
        """Replace the vocabulary (same format as the `vocabulary` argument)."""
        full = with_special_tokens(vocabulary)
        # StringLookup adds the mask (<pad>) and OOV (<unk>) tokens itself.
        lookup_tokens = full[2:]
        self._lookup.set_vocabulary(lookup_tokens)
        self._inverse_lookup.set_vocabulary(lookup_tokens)
        self._set_vocabulary_list(full)

    def split_words(self, strings):
        """Normalise and split text into words (a `tf.RaggedTensor` of strings).

        Args:
            strings: a scalar string or a 1-D batch.

        Returns:
            `tf.string` words: 1-D for a scalar input, ragged `(batch, None)` for a batch.
        """
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        if self.lowercase:
            strings = tf.strings.lower(strings, encoding="utf-8")
        if self.split_punctuation:
            strings = tf.strings.regex_replace(strings, PUNCTUATION_PATTERN, r" \1 ")
        strings = tf.strings.regex_replace(strings, WHITESPACE_PATTERN, " ")
        return tf.strings.split(strings)

    def build_vocabulary(self, texts, max_size=None, min_frequency=1):
        """Count normalised words and set the vocabulary from them.

        Words are ordered by frequency (descending), ties by the word itself
        (ascending), so the result does not depend on the order of `texts`.

        Args:
            texts: list of str. Training-side text only.
            max_size: int or `None`. Maximum `vocabulary_size()`, the 4 special tokens
                included; the least frequent words are left out. `None` keeps all.
            min_frequency: int. Words seen fewer times are left out. Defaults to 1.
        """
        if max_size is not None and (
            not isinstance(max_size, int) or max_size <= len(SPECIAL_TOKENS)
        ):
            raise ValueError(
                f"`max_size` must be None or an integer > {len(SPECIAL_TOKENS)} (the special "
                f"tokens {list(SPECIAL_TOKENS)} count towards it). Received: max_size={max_size!r}"
            )
        if not isinstance(min_frequency, int) or min_frequency < 1:
            raise ValueError(
                f"`min_frequency` must be an integer >= 1. Received: min_frequency={min_frequency!r}"
            )
        texts = list(texts)
        counts = collections.Counter()
        if texts:
            words = self.split_words(tf.constant(texts, dtype=tf.string, shape=[len(texts)]))
            counts.update(words.flat_values.numpy().tolist())
        ranked = sorted(
            (
                (word.decode("utf-8"), count)
                for word, count in counts.items()
                if count >= min_frequency
            ),
            key=lambda item: (-item[1], item[0]),
        )
        words = [word for word, _ in ranked if word not in SPECIAL_TOKENS]
        if max_size is not None:
            words = words[: max_size - len(SPECIAL_TOKENS)]
        self.set_vocabulary(words)

    def _encode(self, strings):
        return self._lookup(self.split_words(strings))

    def _decode(self, ids):
        words = self._inverse_lookup(tf.cast(ids, tf.int64))
        return tf.strings.reduce_join(words, axis=-1, separator=" ")

    def get_config(self):
        config = super().get_config()
        config.update(
            {
                "vocabulary": None if self._vocabulary is None else list(self._vocabulary),
                "lowercase": self.lowercase,
                "split_punctuation": self.split_punctuation,
            }
        )
        return config
