"""`TransformerTranslationModel`: the keras-hub Transformer comparison model."""

import keras
from keras import ops

from keras_rnmt.models.compile_builds_optimizer import CompileBuildsOptimizer
from keras_rnmt.models.config import ModelConfig
from keras_rnmt.models.dropout import Dropout
from keras_rnmt.models.search_log_probs import search_log_probs
from keras_rnmt.models.self_attention_encoder import SelfAttentionEncoder


@keras.saving.register_keras_serializable(package="keras_rnmt")
class TransformerDecoderStack(keras.layers.Layer):
    """Target embeddings + sinusoidal positions + keras-hub `TransformerDecoder` blocks.

    The decoder of Vaswani et al. (2017, Sec. 3.1): each block has causal self-attention,
    cross-attention to the encoder memory and a feed-forward network, post-norm. Training
    runs all target positions at once (`call`); search runs one position at a time with a
    key/value cache (`initial_cache`, then `step`), which is the same math.

    Args:
        vocabulary_size: int. Target vocabulary size (id 0 is padding).
        embedding_dim: int. Model width; must be divisible by `num_heads`.
        num_layers: int. Decoder blocks. Defaults to 3.
        num_heads: int. Attention heads. Defaults to 4.
        intermediate_dim: int. Feed-forward size. Defaults to 1024.
        dropout: float. Embeddings, attention and feed-forward dropout. Defaults to 0.
        max_positions: int. Default cache length for search. Defaults to 512.
        normalize_first: bool. Layer norm before each sublayer and once after the last
            block (pre-LN, Xiong et al. 2020) instead of after each sublayer (post-LN).
            Defaults to False.

    Call arguments:
        target_in: int (batch, target_len), `<s>` + target, 0 = padding.
        memory: float (batch, source_len, embedding_dim), the encoder outputs.
        source_mask: bool (batch, source_len), True on real source tokens.
        training: bool. Defaults to False.

    Returns:
        Logits (batch, target_len, vocabulary_size) float32.

    Example:
    >>> import numpy as np
    >>> decoder = TransformerDecoderStack(30, 8, num_layers=1, num_heads=2, intermediate_dim=16)
    >>> logits = decoder(np.ones((2, 4), "int32"), np.zeros((2, 5, 8)), np.ones((2, 5), bool))
    >>> tuple(logits.shape)
    (2, 4, 30)

    References:
        Vaswani et al. 2017, "Attention Is All You Need".
    """

    def __init__(self, vocabulary_size, embedding_dim, num_layers=3, num_heads=4,
                 intermediate_dim=1024, dropout=0.0, max_positions=512,
                 normalize_first=False, **kwargs):
        super().__init__(**kwargs)
        if embedding_dim % num_heads:
            raise ValueError(
                "`embedding_dim` must be divisible by `num_heads`. Received: "
                f"embedding_dim={embedding_dim}, num_heads={num_heads}"
            )
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.num_layers = num_layers
        self.num_heads = num_heads
        self.intermediate_dim = intermediate_dim
        self.dropout = dropout
        self.max_positions = max_positions
        self.normalize_first = bool(normalize_first)
        self.head_dim = embedding_dim // num_heads
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy, name="embedding"
        )
        import keras_hub  # on use: importing it (and tensorflow_text) costs every process 0.8 s
        self.positions = keras_hub.layers.SinePositionEncoding(
            dtype=self.dtype_policy, name="positions"
        )
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.blocks = [
            keras_hub.layers.TransformerDecoder(
                intermediate_dim, num_heads, dropout=dropout,
                normalize_first=self.normalize_first, dtype=self.dtype_policy,
                name=f"block_{i}",
            )
            for i in range(num_layers)
        ]
        # Pre-LN leaves the residual stream unnormalised: one norm before the projection.
        self.final_norm = (keras.layers.LayerNormalization(
            epsilon=1e-5, dtype=self.dtype_policy, name="final_norm")
            if self.normalize_first else None)
        self.output_layer = keras.layers.Dense(
            vocabulary_size, dtype=self.dtype_policy, name="output_projection"
        )

    def build(self, target_in_shape, memory_shape, source_mask_shape):
        self.embedding.build(target_in_shape)
        hidden_shape = (*target_in_shape, self.embedding_dim)
        for block in self.blocks:
            block.build(hidden_shape, memory_shape)
        if self.final_norm is not None:
            self.final_norm.build(hidden_shape)
        self.output_layer.build(hidden_shape)
        self.built = True

    def _embed(self, target_in, start_index=0, training=False):
        x = self.embedding(target_in) * ops.cast(self.embedding_dim**0.5, self.compute_dtype)
        return self.dropout_layer(x + self.positions(x, start_index=start_index),
                                  training=training)

    # -- teacher-forced training ----------------------------------------------------------
    def call(self, target_in, memory, source_mask, training=False):
        x = self._embed(target_in, training=training)  # batch x target_len x d
        target_mask = ops.not_equal(target_in, 0)
        for block in self.blocks:
            x = block(x, memory, decoder_padding_mask=target_mask,
                      encoder_padding_mask=source_mask, use_causal_mask=True,
                      training=training)
        return ops.cast(self.output_layer(self._normalized(x)), "float32")

    def _normalized(self, x):
        return x if self.final_norm is None else self.final_norm(x)

    def compute_output_spec(self, target_in, memory, source_mask, training=False):
        batch, length = target_in.shape
        return keras.KerasTensor((batch, length, self.vocabulary_size), dtype="float32")

    # -- the pieces search calls ----------------------------------------------------------
    def initial_cache(self, memory, source_mask, max_length=None):
        """Per-block key/value caches before `<s>`, every leaf batch-major.

        Returns `{"self": (cache,) * num_layers, "cross": (cache,) * num_layers}`: the
        self-attention caches are zeros (batch, 2, max_length, num_heads, head_dim), filled
        one position per `step`; the cross-attention caches (batch, 2, source_len, num_heads,
        head_dim) hold the projected encoder memory, computed once here.
        """
        max_length = max_length or self.max_positions
        batch, source_len = ops.shape(memory)[0], ops.shape(memory)[1]
        self_cache = ops.zeros((batch, 2, max_length, self.num_heads, self.head_dim),
                               dtype=self.compute_dtype)
        empty_cross = ops.zeros((batch, 2, source_len, self.num_heads, self.head_dim),
                                dtype=self.compute_dtype)
        # One throw-away position seeds each block's cross cache (as keras-hub's BART
        # `_build_cache`); the cross keys/values depend on the memory only.
        dummy = ops.zeros((batch, 1, self.embedding_dim), dtype=self.compute_dtype)
        cross = []
        for block in self.blocks:
            _, _, cross_cache = block(
                dummy, memory, encoder_padding_mask=source_mask,
                self_attention_cache=self_cache, self_attention_cache_update_index=0,
                cross_attention_cache=empty_cross, cross_attention_cache_update_index=0,
            )
            cross.append(cross_cache)
        return {"self": (self_cache,) * self.num_layers, "cross": tuple(cross)}

    def step(self, tokens, cache, memory, source_mask, index):
        """One inference step at target position `index` (int or scalar int tensor).

        `tokens` (batch,) previous ids -> (logits (batch, V) float32, new cache).
        """
        x = self._embed(tokens[:, None], start_index=index)  # batch x 1 x d
        self_caches = []
        for block, self_cache, cross_cache in zip(self.blocks, cache["self"], cache["cross"]):
            x, self_cache, _ = block(
                x, memory, encoder_padding_mask=source_mask,
                self_attention_cache=self_cache, self_attention_cache_update_index=index,
                cross_attention_cache=cross_cache, cross_attention_cache_update_index=None,
            )
            self_caches.append(self_cache)
        logits = ops.cast(self.output_layer(self._normalized(x[:, 0])), "float32")
        return logits, {"self": tuple(self_caches), "cross": cache["cross"]}

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


@keras.saving.register_keras_serializable(package="keras_rnmt")
class TransformerTranslationModel(CompileBuildsOptimizer, keras.Model):
    """The Transformer comparison model, as an ordinary functional Keras model.

    Encoder: `SelfAttentionEncoder`; decoder: `TransformerDecoderStack`; both keras-hub
    blocks with `embedding_dim`, `num_heads`, `intermediate_dim`, `transformer_layers`,
    `dropout` from the config. Inputs and outputs match `TranslationModel`: `(source_ids,
    target_in)` int padded with 0 -> logits (batch, target_len, target_vocab) float32, and
    search drives it through `search_state()` / `search_step()`.

    Args:
        config: a `ModelConfig` (model_type "transformer") or a dict of its fields.

    Example:
    >>> import numpy as np
    >>> config = ModelConfig(source_vocab_size=50, target_vocab_size=60, model_type="transformer",
    ...                      embedding_dim=8, num_heads=2, intermediate_dim=16,
    ...                      transformer_layers=1)
    >>> model = TransformerTranslationModel(config)
    >>> logits = model((np.ones((2, 5), "int32"), np.ones((2, 4), "int32")))
    >>> tuple(logits.shape)
    (2, 4, 60)

    References:
        Vaswani et al. 2017, "Attention Is All You Need".
    """

    def __init__(self, config, **kwargs):
        if isinstance(config, dict):
            config = ModelConfig.from_dict(config)
        if config.model_type != "transformer":
            raise ValueError(
                "TransformerTranslationModel builds model_type 'transformer'; received "
                f"{config.model_type!r}. Use `keras_rnmt.models.build_model(config)` for any "
                "model type."
            )
        if config.source_vocab_size <= 0 or config.target_vocab_size <= 0:
            raise ValueError(
                "`source_vocab_size` and `target_vocab_size` must be set (> 0). Received: "
                f"{config.source_vocab_size}, {config.target_vocab_size}"
            )
        encoder = SelfAttentionEncoder(
            config.source_vocab_size, config.embedding_dim,
            num_layers=config.transformer_layers, num_heads=config.num_heads,
            intermediate_dim=config.intermediate_dim, dropout=config.dropout,
            max_positions=config.max_positions, normalize_first=config.normalize_first,
            name="encoder",
        )
        decoder = TransformerDecoderStack(
            config.target_vocab_size, config.embedding_dim,
            num_layers=config.transformer_layers, num_heads=config.num_heads,
            intermediate_dim=config.intermediate_dim, dropout=config.dropout,
            max_positions=config.max_positions, normalize_first=config.normalize_first,
            name="decoder",
        )
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        memory, mask, _ = encoder(source_ids)
        logits = decoder(target_in, memory, mask)
        super().__init__(inputs=(source_ids, target_in), outputs=logits, **kwargs)
        self.config = config
        self.encoder = encoder
        self.decoder = decoder

    # -- search interface -----------------------------------------------------------------
    def search_state(self, source_ids, max_length=None):
        """The tree search starts from; every leaf is batch-major.

        `{"memory": (B, S, d), "mask": (B, S) bool, "cache": {"self": per-layer
        (B, 2, max_length, heads, head_dim), "cross": per-layer (B, 2, S, heads, head_dim)},
        "step": (B,) int32}`. `max_length` (default `config.max_positions`) bounds the
        number of `search_step` calls; pass the search's step budget to save memory.
        """
        memory, mask, _ = self.encoder(source_ids, training=False)
        batch = ops.shape(source_ids)[0]
        return {
            "memory": memory,
            "mask": mask,
            "cache": self.decoder.initial_cache(memory, mask, max_length),
            "step": ops.zeros((batch,), dtype="int32"),
        }

    def search_constants(self):
        """Nothing to compute once per search: `{}` (`TranslationModel.search_constants`)."""
        return {}

    def search_constant_variables(self):
        return []

    def search_step(self, tokens, state, constants=None):
        """`(tokens (N,), state) -> (log_probs (N, V) float32, new_state, None)`; `constants`
        (from `search_constants()`, empty) is accepted for interface parity.

        Attention is None: keras-hub's `TransformerDecoder` does not expose its
        cross-attention weights, so no heatmap or coverage penalty for this model.
        """
        logits, cache = self.decoder.step(
            tokens, state["cache"], state["memory"], state["mask"], state["step"][0]
        )
        new_state = {"memory": state["memory"], "mask": state["mask"], "cache": cache,
                     "step": state["step"] + 1}
        return search_log_probs(logits), new_state, None

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)
