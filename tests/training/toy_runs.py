"""The toy run config and the plateau-decay rates the end-to-end training tests expect."""

from keras_rnmt.models import ModelConfig
from keras_rnmt.training.config import TrainConfig


def halved_rates(bleus, rate):
    """The rate of every epoch with patience 0: halved after each epoch whose BLEU does not
    beat all earlier ones."""
    expected, best = [], float("-inf")
    for bleu in bleus:
        expected.append(rate)
        if bleu > best:
            best = bleu
        else:
            rate /= 2
    return expected


def toy_config(**overrides):
    """A `TrainConfig` for a tiny dot-attention model on 256 toy pairs, one short epoch and
    greedy test decoding; any field overridable."""
    values = dict(
        dataset="toy", toy_examples=256, min_frequency=1,
        model=ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot",
                          dropout=0.0),
        batch_size=32, epochs=1, steps_per_epoch=2, learning_rate=1e-2, patience=0,
        beam_size=1, heatmap_sentences=0)
    return TrainConfig(**{**values, **overrides})
