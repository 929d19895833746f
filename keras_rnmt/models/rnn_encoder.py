"""The recurrent encoder: embeddings and stacked (bi)LSTM/GRU layers."""

import keras
from keras import ops

from keras_rnmt.models.dropout import Dropout
from keras_rnmt.models.torch_lstm import fused_lstm


@keras.saving.register_keras_serializable(package="keras_rnmt")
class RNNEncoder(keras.layers.Layer):
    """Embed source ids and encode them with stacked, optionally bidirectional, RNNs.

    The annotation of word i is h_i = [→h_i; ←h_i] (Yang et al. Eq. 1-2); the annotations
    form the memory the decoder attends to.

    Args:
        vocabulary_size: int. Source vocabulary size (id 0 is padding).
        embedding_dim: int. Embedding size.
        units: int. RNN units per direction.
        num_layers: int. Stacked RNN layers. Defaults to 1.
        cell: str. "lstm" or "gru". Defaults to "lstm".
        bidirectional: bool. Defaults to True.
        dropout: float. Dropout on embeddings and between layers. Defaults to 0.

    Call arguments:
        source_ids: int tensor (batch, source_len), 0 = padding.
        training: bool.

    Returns:
        `(memory, mask, final)`: memory (batch, source_len, units * directions), mask bool
        (batch, source_len) with True on real tokens, and final (batch, units * directions),
        the top layer's last real state in each direction (input to the decoder's bridge).

    Example:
    >>> import numpy as np
    >>> encoder = RNNEncoder(vocabulary_size=100, embedding_dim=8, units=4)
    >>> memory, mask, final = encoder(np.array([[5, 6, 0]]))
    >>> tuple(memory.shape), tuple(final.shape)
    ((1, 3, 8), (1, 8))
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim,
        units,
        num_layers=1,
        cell="lstm",
        bidirectional=True,
        dropout=0.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if cell not in ("lstm", "gru"):
            raise ValueError(f"Unknown cell {cell!r}. Valid choices: 'lstm', 'gru'")
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.num_layers = num_layers
        self.cell = cell
        self.bidirectional = bidirectional
        self.dropout = dropout
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy, name="embedding"
        )
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        rnn_class = keras.layers.LSTM if cell == "lstm" else keras.layers.GRU
        self.rnns = []
        for i in range(num_layers):
            rnn = rnn_class(
                units, return_sequences=True, return_state=True, dtype=self.dtype_policy,
                name=f"{cell}_{i}",
            )
            if bidirectional:
                rnn = keras.layers.Bidirectional(rnn, dtype=self.dtype_policy, name=f"bi{cell}_{i}")
            self.rnns.append(rnn)
        self.output_dim = units * (2 if bidirectional else 1)

    def build(self, source_ids_shape):
        source_shape = source_ids_shape
        self.embedding.build(source_shape)
        shape = (*source_shape, self.embedding_dim)
        for rnn in self.rnns:
            rnn.build(shape)
            shape = (*source_shape, self.output_dim)
        self.built = True

    def call(self, source_ids, training=False):
        mask = ops.not_equal(source_ids, 0)
        x = self.dropout_layer(self.embedding(source_ids), training=training)
        for i, rnn in enumerate(self.rnns):
            # Under PyTorch, a masked LSTM runs fused (torch_lstm.py); elsewhere, or where
            # that does not apply, through the Keras layer.
            outputs = fused_lstm(rnn, x, mask, training=training)
            if outputs is None:
                outputs = rnn(x, mask=mask, training=training)
            x = outputs[0]
            if i < self.num_layers - 1:
                x = self.dropout_layer(x, training=training)
        # Final hidden state per direction (LSTM returns h and c per direction, GRU only h).
        states = outputs[1:]
        per_direction = 2 if self.cell == "lstm" else 1
        final = ops.concatenate(states[::per_direction], axis=-1)
        return x, mask, final

    def compute_output_spec(self, source_ids, training=False):
        return encoder_output_spec(source_ids, self.output_dim, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size,
            embedding_dim=self.embedding_dim,
            units=self.units,
            num_layers=self.num_layers,
            cell=self.cell,
            bidirectional=self.bidirectional,
            dropout=self.dropout,
        )
        return config


def encoder_output_spec(source_ids, output_dim, dtype):
    """The `(memory, mask, final)` specs every encoder returns for `source_ids`."""
    batch, length = source_ids.shape
    return (
        keras.KerasTensor((batch, length, output_dim), dtype=dtype),
        keras.KerasTensor((batch, length), dtype="bool"),
        keras.KerasTensor((batch, output_dim), dtype=dtype),
    )
