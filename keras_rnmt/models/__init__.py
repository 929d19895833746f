"""Translation models: encoders, the step-wise decoder, and the models built from a config."""

from keras_rnmt.models.attention_decoder import AttentionDecoder
from keras_rnmt.models.config import ModelConfig
from keras_rnmt.models.decoder_cell import AttentionDecoderCell
from keras_rnmt.models.rnn_encoder import RNNEncoder
from keras_rnmt.models.self_attention_encoder import SelfAttentionEncoder
from keras_rnmt.models.transformer_model import TransformerDecoderStack, TransformerTranslationModel
from keras_rnmt.models.translation_model import TranslationModel


def build_model(config):
    """Build the model a `ModelConfig` (or dict) describes: RNN or Transformer."""
    if isinstance(config, dict):
        config = ModelConfig.from_dict(config)
    if config.model_type == "transformer":
        return TransformerTranslationModel(config)
    return TranslationModel(config)


__all__ = [
    "AttentionDecoder",
    "AttentionDecoderCell",
    "ModelConfig",
    "RNNEncoder",
    "SelfAttentionEncoder",
    "TransformerDecoderStack",
    "TransformerTranslationModel",
    "TranslationModel",
    "build_model",
]
