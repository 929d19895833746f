"""Small synthetic batches and models shared by the model tests."""

import numpy as np

from keras_rnmt.models import ModelConfig, build_model

VOCAB = 24


def reverse_copy_batch(n=64, length=7, seed=0, min_length=3):
    """Source: random ids 4..VOCAB-1, min_length..length words; target: the reversed source."""
    rng = np.random.default_rng(seed)
    source = np.zeros((n, length + 1), "int32")
    target_in = np.zeros((n, length + 1), "int32")
    target_out = np.zeros((n, length + 1), "int32")
    for row in range(n):
        size = rng.integers(min_length, length + 1)
        words = rng.integers(4, VOCAB, size)
        source[row, :size] = words
        source[row, size] = 3
        reversed_words = words[::-1]
        target_in[row, 0] = 2
        target_in[row, 1:size + 1] = reversed_words
        target_out[row, :size] = reversed_words
        target_out[row, size] = 3
    return source, target_in, target_out


def small_model(**overrides):
    values = dict(source_vocab_size=VOCAB, target_vocab_size=VOCAB, embedding_dim=16,
                  encoder_units=16, decoder_units=32, attention_units=16, memory_units=8,
                  window=1, dropout=0.0)
    values.update(overrides)
    return build_model(ModelConfig(**values))


def built_model_and_batch(**overrides):
    """A seeded, built `small_model(**overrides)` and a 6-sentence reverse-copy batch
    `(source, target_in, target_out)`: what the deferred-gradient tests differentiate."""
    import keras

    keras.utils.set_random_seed(0)
    model = small_model(**overrides)
    batch = reverse_copy_batch(n=6, length=5, seed=3)
    model(batch[:2])
    return model, batch


# Decoder variants whose training unroll takes the kernels' gradients after the loop
# (tests/models/test_deferred_scan.py under JAX, test_torch_deferred_scan.py under PyTorch).
DEFERRED_VARIANTS = [
    dict(attention="bahdanau"),
    dict(attention="bahdanau", attention_order="bahdanau"),
    dict(attention="none"),
    dict(attention="recurrent", window=2),
    dict(attention="general", input_feeding="context", decoder_layers=2),
    dict(attention="bahdanau", cell="gru"),  # GRU kernels stay in the loop; W_c is deferred
]
