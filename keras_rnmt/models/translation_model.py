"""`TranslationModel`: a functional Keras model built from a `ModelConfig`."""

import keras
from keras import ops

from keras_rnmt.loop import scan
from keras_rnmt.models.attention_decoder import AttentionDecoder
from keras_rnmt.models.compile_builds_optimizer import CompileBuildsOptimizer
from keras_rnmt.models.config import ModelConfig
from keras_rnmt.models.rnn_encoder import RNNEncoder
from keras_rnmt.models.search_log_probs import search_log_probs
from keras_rnmt.models.self_attention_encoder import SelfAttentionEncoder


@keras.saving.register_keras_serializable(package="keras_rnmt")
class TranslationModel(CompileBuildsOptimizer, keras.Model):
    """An RNN encoder-decoder with attention, as an ordinary functional Keras model.

    Inputs are `(source_ids, target_in)` int tensors padded with 0, the output is the
    logits (batch, target_len, target_vocab) float32, so `model.fit` trains it on the
    `((source_ids, target_in), target_out)` batches of `keras_rnmt.data.make_dataset`.
    Search drives it through `search_state()` and `search_step()`, which call the same
    decoder step the training unroll uses.

    Args:
        config: a `ModelConfig` or a dict of its fields.

    Example:
    >>> import numpy as np
    >>> config = ModelConfig(source_vocab_size=50, target_vocab_size=60, embedding_dim=8,
    ...                      encoder_units=8, decoder_units=16, attention="recurrent")
    >>> model = TranslationModel(config)
    >>> logits = model((np.ones((2, 5), "int32"), np.ones((2, 4), "int32")))
    >>> tuple(logits.shape)
    (2, 4, 60)
    """

    def __init__(self, config, **kwargs):
        if isinstance(config, dict):
            config = ModelConfig.from_dict(config)
        if config.model_type != "rnn":
            raise ValueError(
                f"TranslationModel builds model_type 'rnn'; received {config.model_type!r}. "
                "Use `keras_rnmt.models.build_model(config)` for any model type."
            )
        if config.source_vocab_size <= 0 or config.target_vocab_size <= 0:
            raise ValueError(
                "`source_vocab_size` and `target_vocab_size` must be set (> 0). Received: "
                f"{config.source_vocab_size}, {config.target_vocab_size}"
            )
        if config.encoder_type == "rnn":
            encoder = RNNEncoder(
                config.source_vocab_size, config.embedding_dim, config.encoder_units,
                num_layers=config.encoder_layers, cell=config.cell,
                bidirectional=config.bidirectional, dropout=config.dropout, name="encoder",
            )
        else:
            encoder = SelfAttentionEncoder(
                config.source_vocab_size, config.embedding_dim,
                num_layers=config.transformer_layers, num_heads=config.num_heads,
                intermediate_dim=config.intermediate_dim, dropout=config.dropout,
                max_positions=config.max_positions, normalize_first=config.normalize_first,
                name="encoder",
            )
        decoder = AttentionDecoder(
            config.target_vocab_size, config.embedding_dim, config.decoder_units,
            num_layers=config.decoder_layers, cell=config.cell, attention=config.attention,
            attention_options=attention_options(config), attention_order=config.attention_order,
            input_feeding=config.input_feeding, bridge=config.bridge, dropout=config.dropout,
            teacher_forcing_ratio=config.teacher_forcing_ratio, name="decoder",
        )
        source_ids = keras.Input((None,), dtype="int32", name="source_ids")
        target_in = keras.Input((None,), dtype="int32", name="target_in")
        memory, mask, final = encoder(source_ids)
        logits = decoder(target_in, memory, mask, final)
        super().__init__(inputs=(source_ids, target_in), outputs=logits, **kwargs)
        self.config = config
        self.encoder = encoder
        self.decoder = decoder

    # -- search interface -----------------------------------------------------------------
    def search_state(self, source_ids, max_length=None):
        """The tree search starts from: decoder state, per-sentence constants, step counter.

        Every leaf is batch-major, so beam search can tile and reorder it generically.
        `max_length` is accepted for interface parity with the Transformer (whose cache
        needs it); the RNN state does not depend on it.
        """
        memory, mask, final = self.encoder(source_ids, training=False)
        context = self.decoder.prepare(memory, mask, final)
        batch = ops.shape(source_ids)[0]
        return {
            "decoder": self.decoder.initial_state(context),
            "context": context,
            "step": ops.zeros((batch,), dtype="int32"),
        }

    def search_constants(self):
        """What every step of a search reads and no step changes, computed from the current
        weights once for many searches instead of at every step
        (`AttentionDecoder.search_constants`: for an LSTM decoder, every target word's
        embedding times the LSTM's input kernel rows for it; `{}` for GRU). Pass it to
        `search_step`; compute it again after a variable of `search_constant_variables()`
        changes."""
        return self.decoder.search_constants()

    def search_constant_variables(self):
        """The variables `search_constants()` is computed from."""
        return self.decoder.search_constant_variables()

    def search_step(self, tokens, state, constants=None):
        """`(tokens (N,), state) -> (log_probs (N, V), new_state, α_j (N, S) or None)`.

        `constants`: `search_constants()` of the current weights, or None (the same step,
        every product computed in it)."""
        logits, decoder_state, weights = self.decoder.step(
            tokens, state["decoder"], state["context"], state["step"][0], constants=constants
        )
        new_state = {"decoder": decoder_state, "context": state["context"],
                     "step": state["step"] + 1}
        return search_log_probs(logits), new_state, weights

    def attention_weights(self, source_ids, target_in):
        """Teacher-forced attention weights (batch, target_len, source_len) for heatmaps."""
        memory, mask, final = self.encoder(source_ids, training=False)
        return self.decoder(target_in, memory, mask, final, return_attention=True)[1]

    def attention_states(self, source_ids, target_in):
        """Teacher-forced attention state after every target step, for inspection and plots.

        Replays `target_in` through `search_step` (the decoder step search uses), so the state
        of step j is the one that scored target position j: for `RecurrentAttention` it is
        `(α_j (B, T, S), d_j (B, T, S, memory_units), LSTM carry (B, T, S, memory_units))`,
        with d_ij the dynamic memory of source word i in the score of Eq. 11.

        Args:
            source_ids: int (batch, source_len), padded with 0.
            target_in: int (batch, target_len): `<s>` then the target tokens.

        Returns:
            The attention's state tuple with every leaf stacked to (batch, target_len, ...);
            `()` for a stateless attention (or none).
        """
        state = self.search_state(source_ids)
        if not state["decoder"]["attention"]:
            return ()

        def body(state, tokens):
            _, state, _ = self.search_step(tokens, state)
            return state, state["decoder"]["attention"]

        target_in = ops.convert_to_tensor(target_in, dtype="int32")
        _, states = scan(body, state, ops.transpose(target_in))  # target_len x batch x ...
        return tuple(ops.swapaxes(leaf, 0, 1) for leaf in states)

    def get_config(self):
        return {"config": self.config.to_dict(), "name": self.name, "trainable": self.trainable}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def attention_options(config):
    """The attention layer's keyword arguments for a `ModelConfig`."""
    units = config.attention_units or config.decoder_units
    name = config.attention
    if name in ("none", "dot", "general"):
        return {}
    if name in ("local-m", "local-p"):
        return {"window": config.window, "units": units}
    if name == "recurrent":
        return {"units": units, "window": config.window,
                "memory_units": config.memory_units or max(1, units // 2)}
    if name == "coverage":
        return {"units": units, "coverage": config.coverage}
    return {"units": units}  # bahdanau, concat
