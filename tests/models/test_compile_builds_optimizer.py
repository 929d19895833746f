"""`compile` builds the optimizer, so the first training step is traced once (TensorFlow
traces a `tf.function` again when its first trace creates variables)."""

import keras
import pytest
from keras import ops
from model_helpers import reverse_copy_batch, small_model

from keras_rnmt.models import build_model
from keras_rnmt.training.losses import MaskedCrossEntropy

TRANSFORMER = dict(source_vocab_size=24, target_vocab_size=24, model_type="transformer",
                   embedding_dim=8, num_heads=2, intermediate_dim=16, transformer_layers=1)


@pytest.mark.parametrize("model_fn", [lambda: small_model(attention="recurrent"),
                                      lambda: build_model(TRANSFORMER)],
                         ids=["rnn", "transformer"])
def test_compile_creates_the_optimizer_variables(model_fn):
    model = model_fn()
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=MaskedCrossEntropy())
    assert model.optimizer.built
    # Adam: a first and a second moment for every trainable variable.
    moments = [v for v in model.optimizer.variables if v.path.endswith(("_momentum",
                                                                          "_velocity"))]
    assert len(moments) == 2 * len(model.trainable_variables)


def test_a_loaded_model_is_compiled_as_it_was_saved(tmp_path):
    import warnings

    model = small_model(attention="recurrent")
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss=MaskedCrossEntropy())
    model.save(tmp_path / "model.keras")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # Keras warns when it skips a custom compile
        loaded = keras.saving.load_model(tmp_path / "model.keras")
    assert loaded.compiled and loaded.optimizer.built
    assert isinstance(loaded.optimizer, keras.optimizers.Adam)
    assert float(ops.convert_to_numpy(loaded.optimizer.learning_rate)) == pytest.approx(3e-3)
    assert isinstance(loaded.loss, MaskedCrossEntropy)


def test_a_loss_scale_optimizer_compiled_after_the_plain_one_is_built_too():
    model = small_model(attention="bahdanau")
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=MaskedCrossEntropy())
    scaled = keras.optimizers.LossScaleOptimizer(model.optimizer)
    model.compile(optimizer=scaled, loss=MaskedCrossEntropy())
    assert scaled.built and scaled.inner_optimizer.built


@pytest.mark.backends("tensorflow", "jax")
def test_the_training_step_is_traced_once_for_batches_of_one_shape():
    source, target_in, target_out = reverse_copy_batch(n=96, seed=1)
    model = small_model(attention="recurrent")
    traces = []
    plain_step = model.train_step

    def counting_step(*args):  # TensorFlow: (data); JAX: (state, data)
        traces.append(1)  # Python runs only while tracing (tf.function, jax.jit)
        return plain_step(*args)

    model.train_step = counting_step
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss=MaskedCrossEntropy())
    model.fit((source, target_in), target_out, batch_size=32, epochs=2, verbose=0)
    assert int(ops.convert_to_numpy(model.optimizer.iterations)) == 6
    assert len(traces) == 1
