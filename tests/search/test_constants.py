"""`SearchConstants`: computed once, again only when their weights change."""

import keras
import numpy as np
from keras import ops

from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.search.constants import SearchConstants


class CountingModel:
    """The two methods `SearchConstants` calls, over real Keras variables."""

    def __init__(self, model):
        self.model, self.calls = model, 0

    def search_constants(self):
        self.calls += 1
        return self.model.search_constants()

    def search_constant_variables(self):
        return self.model.search_constant_variables()


def _built(seed=0):
    keras.utils.set_random_seed(seed)
    model = build_model(ModelConfig(source_vocab_size=20, target_vocab_size=24, embedding_dim=8,
                                    encoder_units=8, decoder_units=16, attention="bahdanau"))
    model((np.ones((1, 3), "int32"), np.ones((1, 2), "int32")))
    return model


def test_computed_once_then_again_after_an_assign_or_for_another_model():
    model = CountingModel(_built())
    constants = SearchConstants()
    first = constants(model)
    assert constants(model) is first and model.calls == 1
    kernel = model.model.decoder.cell.cells[0].kernel
    kernel.assign(ops.convert_to_numpy(kernel) * 2.0)  # what a training step does
    second = constants(model)
    assert model.calls == 2 and second is not first
    np.testing.assert_allclose(ops.convert_to_numpy(second["input_table"]),
                               2.0 * ops.convert_to_numpy(first["input_table"]), rtol=1e-5)
    assert constants(model) is second and model.calls == 2
    other = CountingModel(model.model)
    constants(other)
    assert other.calls == 1


def test_an_assign_of_the_same_values_outside_jax_keeps_them():
    # Under JAX an assign makes a new array, so the constants are computed again; the other
    # backends compare values. Either way the values are the model's.
    model = CountingModel(_built())
    constants = SearchConstants()
    first = constants(model)
    embeddings = model.model.decoder.embedding.embeddings
    embeddings.assign(ops.convert_to_numpy(embeddings))
    again = constants(model)
    np.testing.assert_array_equal(ops.convert_to_numpy(again["input_table"]),
                                  ops.convert_to_numpy(first["input_table"]))


def test_a_model_without_search_constants_gets_none():
    assert SearchConstants()(object()) == {}
