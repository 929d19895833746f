"""Filler rows (`make_dataset(batch_multiple=...)`, for data-parallel batches) change nothing.

A batch filled up with copies of its sources whose targets are all `<pad>` must give the
same loss, the same gradient (so the same weights after a plain SGD step) and the same token
accuracy as the batch without them, for the RNN and the Transformer family, under every
backend.
"""

import keras
import numpy as np
import pytest
import tensorflow as tf
from model_helpers import VOCAB, reverse_copy_batch, small_model

from keras_rnmt.data.pipeline import _fill_up
from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.training.losses import MaskedAccuracy, MaskedCrossEntropy

# The RNN family shares one decoder loop and loss; the Transformer masks its own way.
KINDS = {
    "bahdanau": dict(attention="bahdanau"),
    "recurrent": dict(attention="recurrent"),
}


def transformer():
    return build_model(ModelConfig(source_vocab_size=VOCAB, target_vocab_size=VOCAB,
                                   model_type="transformer", embedding_dim=16, num_heads=2,
                                   intermediate_dim=32, transformer_layers=1, dropout=0.0))


def sgd_step(model, weights, batch, label_smoothing):
    """(loss, accuracy, weights after the step) of one SGD step from `weights` on `batch`."""
    model.set_weights(weights)
    model.compile(optimizer=keras.optimizers.SGD(0.5),
                  loss=MaskedCrossEntropy(label_smoothing), metrics=[MaskedAccuracy()])
    source, target_in, target_out = batch
    logs = model.train_on_batch((source, target_in), target_out, return_dict=True)
    return logs["loss"], logs["token_accuracy"], model.get_weights()


@pytest.mark.parametrize("kind", [*KINDS, "transformer"])
def test_filler_rows_add_nothing_to_loss_gradient_or_accuracy(kind):
    keras.utils.set_random_seed(0)
    model = transformer() if kind == "transformer" else small_model(**KINDS[kind])
    batch = reverse_copy_batch(n=5, seed=3)
    filled = tuple(np.asarray(x) for x in _fill_up(tuple(map(tf.constant, batch)), 4))
    assert filled[0].shape[0] == 8
    weights = model.get_weights()
    # With label smoothing the loss has both terms (the reference's and the uniform one).
    loss, accuracy, after = sgd_step(model, weights, batch, label_smoothing=0.1)
    filled_loss, filled_accuracy, filled_after = sgd_step(model, weights, filled, 0.1)
    assert np.isfinite(filled_loss)
    np.testing.assert_allclose(filled_loss, loss, rtol=1e-5)
    np.testing.assert_allclose(filled_accuracy, accuracy, rtol=1e-6)
    for a, b in zip(after, filled_after):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-6)
