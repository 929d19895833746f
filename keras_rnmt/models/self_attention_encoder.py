"""A self-attention encoder from keras-hub blocks, a drop-in for `RNNEncoder`."""

import keras
from keras import ops

from keras_rnmt.models.dropout import Dropout
from keras_rnmt.models.rnn_encoder import encoder_output_spec


@keras.saving.register_keras_serializable(package="keras_rnmt")
class SelfAttentionEncoder(keras.layers.Layer):
    """Embeddings + sinusoidal positions + a stack of keras-hub `TransformerEncoder` blocks.

    The comparison encoder of Zhu et al. (the "self-attention encoder" row): the RNN decoder
    attends to its outputs exactly as to a bi-LSTM's. Its "final state" for the bridge is the
    mean of the outputs over real tokens.

    Args:
        vocabulary_size: int. Source vocabulary size (id 0 is padding).
        embedding_dim: int. Model width.
        num_layers: int. Encoder blocks. Defaults to 3.
        num_heads: int. Attention heads. Defaults to 4.
        intermediate_dim: int. Feed-forward size. Defaults to 1024.
        dropout: float. Defaults to 0.
        max_positions: int. Kept for config symmetry with the Transformer; sinusoidal
            positions need no table. Defaults to 512.
        normalize_first: bool. Layer norm before each sublayer and once after the last
            block (pre-LN, Xiong et al. 2020) instead of after each sublayer (post-LN,
            Vaswani et al.). Defaults to False. Post-LN wants a learning-rate warm-up: at
            Adam 1e-3 without one it mapped every source position of a sentence to nearly
            one vector and the model did not learn (benchmarks/position_similarity.py).

    Call arguments:
        source_ids: int (batch, source_len), 0 = padding.

    Returns:
        `(memory (batch, source_len, embedding_dim), mask (batch, source_len) bool,
        final (batch, embedding_dim))`.

    References:
        Vaswani et al. 2017, "Attention Is All You Need".
    """

    def __init__(self, vocabulary_size, embedding_dim, num_layers=3, num_heads=4,
                 intermediate_dim=1024, dropout=0.0, max_positions=512,
                 normalize_first=False, **kwargs):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_positions = max_positions
        self.normalize_first = bool(normalize_first)
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy, name="embedding"
        )
        import keras_hub  # on use: importing it (and tensorflow_text) costs every process 0.8 s
        self.positions = keras_hub.layers.SinePositionEncoding(
            dtype=self.dtype_policy, name="positions"
        )
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.blocks = [
            keras_hub.layers.TransformerEncoder(
                intermediate_dim, num_heads, dropout=dropout,
                normalize_first=self.normalize_first, dtype=self.dtype_policy,
                name=f"block_{i}",
            )
            for i in range(num_layers)
        ]
        # Pre-LN leaves the residual stream unnormalised: one norm after the stack.
        self.final_norm = (keras.layers.LayerNormalization(
            epsilon=1e-5, dtype=self.dtype_policy, name="final_norm")
            if self.normalize_first else None)
        self.output_dim = embedding_dim

    def build(self, source_ids_shape):
        self.embedding.build(source_ids_shape)
        for block in self.blocks:
            block.build((*source_ids_shape, self.embedding_dim))
        if self.final_norm is not None:
            self.final_norm.build((*source_ids_shape, self.embedding_dim))
        self.built = True

    def block_outputs(self, source_ids, training=False):
        """The stack's residual stream, for inspection (`benchmarks/position_similarity.py`).

        Returns:
            `(outputs, mask)`: `outputs` is a list of `num_layers + 1` tensors (batch,
            source_len, embedding_dim), the scaled embeddings plus positions, then each
            block's output (before the pre-LN stack's final norm); mask (batch, source_len).
        """
        mask = ops.not_equal(source_ids, 0)
        x = self.embedding(source_ids) * ops.cast(self.embedding_dim**0.5, self.compute_dtype)
        x = self.dropout_layer(x + self.positions(x), training=training)
        outputs = [x]
        for block in self.blocks:
            x = block(x, padding_mask=mask, training=training)
            outputs.append(x)
        return outputs, mask

    def call(self, source_ids, training=False):
        outputs, mask = self.block_outputs(source_ids, training=training)
        x = outputs[-1]
        if self.final_norm is not None:
            x = self.final_norm(x)
        weights = ops.cast(mask, x.dtype)[:, :, None]
        final = ops.sum(x * weights, axis=1) / ops.maximum(ops.sum(weights, axis=1), 1.0)
        return x, mask, final

    def compute_output_spec(self, source_ids, training=False):
        return encoder_output_spec(source_ids, self.output_dim, self.compute_dtype)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size,
            embedding_dim=self.embedding_dim,
            num_layers=self.num_layers,
            num_heads=self.num_heads,
            intermediate_dim=self.intermediate_dim,
            dropout=self.dropout,
            max_positions=self.max_positions,
            normalize_first=self.normalize_first,
        )
        return config
