"""The interface shared by every keras-rnmt tokenizer.

All tokenizers reserve the same four special tokens at the same ids, so model code never
depends on which tokenizer produced its inputs:

| token | id | role |
| --- | --- | --- |
| `<pad>` | 0 | padding; masked out by the models |
| `<unk>` | 1 | out-of-vocabulary word or piece |
| `<s>` | 2 | beginning of sentence: first decoder input |
| `</s>` | 3 | end of sentence: appended to sources and targets |

`tokenize` and `detokenize` are TensorFlow graph functions whatever `KERAS_BACKEND` is:
they run inside `tf.data` pipelines and can be traced into a `tf.function` or a
SavedModel, and they return TensorFlow tensors (convert with `.numpy()` or
`keras.ops.convert_to_tensor` where a backend tensor is needed).
"""

import functools
import json

import keras
import numpy as np
import tensorflow as tf

PAD_TOKEN = "<pad>"
UNK_TOKEN = "<unk>"
BOS_TOKEN = "<s>"
EOS_TOKEN = "</s>"
SPECIAL_TOKENS = (PAD_TOKEN, UNK_TOKEN, BOS_TOKEN, EOS_TOKEN)
PAD_ID, UNK_ID, BOS_ID, EOS_ID = range(len(SPECIAL_TOKENS))

SAVE_FORMAT = "keras_rnmt.tokenizer"
SAVE_VERSION = 1


def with_special_tokens(vocabulary, argument="vocabulary"):
    """Return `vocabulary` with the four special tokens at ids 0..3.

    A list that already starts with exactly `SPECIAL_TOKENS` (as `get_vocabulary()`
    returns) is accepted unchanged; otherwise the specials are prepended. A special
    token anywhere else, an empty or non-string entry, or a duplicate is an error.
    """
    vocabulary = [str(token) if isinstance(token, np.str_) else token for token in vocabulary]
    if tuple(vocabulary[: len(SPECIAL_TOKENS)]) == SPECIAL_TOKENS:
        vocabulary = vocabulary[len(SPECIAL_TOKENS) :]
    seen = set()
    for index, token in enumerate(vocabulary):
        if not isinstance(token, str) or not token:
            raise ValueError(
                f"`{argument}` must hold non-empty strings. Received: {token!r} at index {index}"
            )
        if token in SPECIAL_TOKENS:
            raise ValueError(
                f"`{argument}` may contain the special tokens {list(SPECIAL_TOKENS)} only as "
                f"its first four entries, in that order. Received: {token!r} at index {index}"
            )
        if token in seen:
            raise ValueError(f"`{argument}` contains {token!r} twice")
        seen.add(token)
    return list(SPECIAL_TOKENS) + vocabulary


def _to_python_ids(ids):
    """Convert ids (list, numpy, TF dense or ragged, backend tensor) to nested lists."""
    if isinstance(ids, tf.RaggedTensor):
        return ids.to_list()
    if isinstance(ids, (int, np.integer)):
        return int(ids)
    if isinstance(ids, (list, tuple)):
        return [_to_python_ids(item) for item in ids]
    if isinstance(ids, tf.Tensor):
        return ids.numpy().tolist()
    return np.asarray(keras.ops.convert_to_numpy(ids)).tolist()


class Tokenizer(keras.layers.Layer):
    """Base class: fixed special ids, graph `tokenize`/`detokenize`, JSON `save`.

    Subclasses call `_set_vocabulary_list(full_vocabulary)` whenever their vocabulary
    changes and implement two graph hooks on 1-D batches:
    `_encode(strings) -> tf.RaggedTensor` of ids and `_decode(ids) -> strings`, where
    `ids` is already stripped of `<pad>`/`<s>` and cut at the first `</s>`.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        # Strings and ragged tensors are valid positional inputs to `__call__`.
        self._allow_non_tensor_positional_args = True
        self._convert_input_args = False
        self._vocabulary = None
        self._token_index = None
        # One trace per tokenizer, whatever the batch size or lengths. (A `partial`
        # rather than a bound method keeps TF's retracing counter per instance.)
        self._tokenize_batch = tf.function(
            functools.partial(type(self)._tokenize_graph, self),
            input_signature=[tf.TensorSpec([None], tf.string)],
        )
        self._detokenize_batch = tf.function(
            functools.partial(type(self)._detokenize_graph, self),
            input_signature=[tf.RaggedTensorSpec([None, None], tf.int32, 1, tf.int64)],
        )

    # -- vocabulary -----------------------------------------------------------------

    def _set_vocabulary_list(self, vocabulary):
        if tuple(vocabulary[: len(SPECIAL_TOKENS)]) != SPECIAL_TOKENS:
            raise ValueError(
                f"{type(self).__name__} needs the special tokens {list(SPECIAL_TOKENS)} at "
                f"ids 0..3. Received first tokens: {list(vocabulary[: len(SPECIAL_TOKENS)])}"
            )
        self._vocabulary = list(vocabulary)
        self._token_index = {token: index for index, token in enumerate(self._vocabulary)}

    def _check_vocabulary(self):
        if self._vocabulary is None:
            raise ValueError(
                f"{type(self).__name__} has no vocabulary yet. Pass one to the constructor "
                "or call `build_vocabulary(texts)` first."
            )

    @property
    def pad_id(self):
        return PAD_ID

    @property
    def unk_id(self):
        return UNK_ID

    @property
    def bos_id(self):
        return BOS_ID

    @property
    def eos_id(self):
        return EOS_ID

    def get_vocabulary(self):
        """Return the vocabulary as a list of strings; index `i` is the token of id `i`."""
        self._check_vocabulary()
        return list(self._vocabulary)

    def vocabulary_size(self):
        """Return the number of ids, special tokens included."""
        self._check_vocabulary()
        return len(self._vocabulary)

    def id_to_token(self, id):
        """Return the token string of integer `id`."""
        self._check_vocabulary()
        id = int(id)
        if not 0 <= id < len(self._vocabulary):
            raise ValueError(f"`id` must be in [0, {len(self._vocabulary) - 1}]. Received: id={id}")
        return self._vocabulary[id]

    def token_to_id(self, token):
        """Return the id of `token`; unknown tokens give `unk_id`."""
        self._check_vocabulary()
        return self._token_index.get(token, UNK_ID)

    def tokens(self, ids):
        """Map ids to token strings in Python, one label per id (specials kept).

        Meant for attention heatmap labels. A 1-D sequence gives a list of strings; a
        2-D batch (list of lists, numpy, dense or ragged tensor) gives a list of lists.
        """
        self._check_vocabulary()
        ids = _to_python_ids(ids)
        if isinstance(ids, int):
            raise ValueError(f"`ids` must be a sequence or a batch of sequences. Received: {ids}")
        if ids and isinstance(ids[0], list):
            return [[self.id_to_token(i) for i in row] for row in ids]
        return [self.id_to_token(i) for i in ids]

    # -- graph functions --------------------------------------------------------------

    def tokenize(self, strings):
        """Map strings to token ids (no `<s>`/`</s>` added).

        Args:
            strings: a scalar string or a 1-D batch (Python str/list, numpy, `tf.Tensor`).

        Returns:
            For a batch, a `tf.RaggedTensor` of int32 ids of shape `(batch, None)`; for
            a scalar, a dense int32 `tf.Tensor` of shape `(None,)`.
        """
        self._check_vocabulary()
        strings = tf.convert_to_tensor(strings, dtype=tf.string)
        rank = strings.shape.rank
        if rank == 0:
            return self._tokenize_batch(strings[tf.newaxis])[0]
        if rank != 1:
            raise ValueError(
                "`strings` must be a scalar string or a 1-D batch of strings. "
                f"Received shape: {strings.shape}"
            )
        return self._tokenize_batch(strings)

    def detokenize(self, ids):
        """Map ids back to text: drops `<pad>` and `<s>`, stops at the first `</s>`.

        Tokens are joined with single spaces (subword pieces are merged first).

        Args:
            ids: one sequence (1-D) or a batch (2-D) of integer ids, dense (padded) or
                `tf.RaggedTensor`, numpy array, nested lists or a backend tensor.

        Returns:
            A `tf.string` tensor: shape `(batch,)` for a batch, a scalar for one sequence.
        """
        self._check_vocabulary()
        if isinstance(ids, tf.RaggedTensor):
            ids = tf.cast(ids, tf.int32).with_row_splits_dtype(tf.int64)
        elif isinstance(ids, tf.Tensor):
            ids = tf.cast(ids, tf.int32)
        else:
            python_ids = _to_python_ids(ids)
            if isinstance(python_ids, int):
                raise ValueError(f"`ids` must be 1-D or 2-D. Received a scalar: {python_ids}")
            if python_ids and isinstance(python_ids[0], list):
                ids = tf.ragged.constant(python_ids, dtype=tf.int32, ragged_rank=1)
            else:
                ids = tf.constant(python_ids, dtype=tf.int32, shape=[len(python_ids)])
        rank = ids.shape.rank
        if rank == 1:
            return self._detokenize_batch(tf.RaggedTensor.from_tensor(ids[tf.newaxis]))[0]
        if rank != 2:
            raise ValueError(f"`ids` must be 1-D or 2-D. Received shape: {ids.shape}")
        if not isinstance(ids, tf.RaggedTensor):
            ids = tf.RaggedTensor.from_tensor(ids)
        return self._detokenize_batch(ids)

    def _tokenize_graph(self, strings):
        return tf.cast(self._encode(strings), tf.int32)

    def _detokenize_graph(self, ids):
        dense = ids.to_tensor(default_value=PAD_ID)
        before_eos = tf.cumsum(tf.cast(tf.equal(dense, EOS_ID), tf.int32), axis=1) == 0
        keep = before_eos & tf.not_equal(dense, PAD_ID) & tf.not_equal(dense, BOS_ID)
        return self._decode(tf.ragged.boolean_mask(dense, keep))

    def _encode(self, strings):
        raise NotImplementedError

    def _decode(self, ids):
        raise NotImplementedError

    def build(self, input_shape=None):
        # Nothing to build: lookup tables are created with the vocabulary.
        self.built = True

    def call(self, strings):
        return self.tokenize(strings)

    # -- saving -----------------------------------------------------------------------

    def save(self, path):
        """Write this tokenizer (config and vocabulary) to one JSON file.

        Load it back with `keras_rnmt.data.load_tokenizer(path)`, which returns an
        instance of the saved class.
        """
        payload = {
            "format": SAVE_FORMAT,
            "version": SAVE_VERSION,
            "class_name": type(self).__name__,
            "config": self.get_config(),
        }
        with open(path, "w", encoding="utf-8") as file:
            json.dump(payload, file, ensure_ascii=False)
