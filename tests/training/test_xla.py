"""Training compiled by XLA (`jit_compile=True`) on the real `tf.data` pipeline.

Under TensorFlow, Keras' `jit_compile="auto"` picks XLA on any machine with a GPU, and the
pipeline's batches have a dynamic batch size and length. A `Dense` applied to a rank-3 tensor
inside the decoder's loop then failed to compile (its `tensordot` gradient needs a transpose
permutation XLA cannot fold); `MatrixDense` applies it as one 2-D matmul instead. So the
compiled runs are TensorFlow's: JAX compiles every `fit` of the suite with XLA already, and
PyTorch's `jit_compile=True` is `torch.compile` (it trains the tiny recurrent model, in 4
minutes here).
"""

import keras
import numpy as np
import pytest
from run_helpers import SOURCES, TARGETS, tiny_parts

from keras_rnmt.attention.base import MatrixDense
from keras_rnmt.data import make_dataset
from keras_rnmt.training.config import TrainConfig, jit_compile_arg
from keras_rnmt.training.losses import MaskedCrossEntropy

# The dynamic memory, the coverage state and local-p's position network. The first two are
# additive attentions (`BahdanauAttention` subclasses: its Dense on a (B, S, d) tensor inside
# the loop, Luong's concat the same code), so plain Bahdanau, 15-18 s more under TensorFlow,
# adds no code to compile here.
ATTENTIONS = ("recurrent", "coverage", "local-p")


def fit_losses(attention, jit_compile, **overrides):
    model, source_tokenizer, target_tokenizer = tiny_parts(attention=attention, **overrides)
    # One batch of all four sentences, (4, 8) ids: the traced step has its batch and length
    # dimensions unknown (the pipeline's element spec), which is what failed to compile, and
    # XLA compiles it for one shape.
    data = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer, batch_size=4,
                        bucket_width=10, shuffle=False)
    model.compile(optimizer=keras.optimizers.SGD(0.5), loss=MaskedCrossEntropy(),
                  jit_compile=jit_compile)
    history = model.fit(data.repeat(), epochs=3, steps_per_epoch=2, verbose=0, shuffle=False)
    return history.history["loss"]


@pytest.mark.heavy
@pytest.mark.tensorflow_only
@pytest.mark.parametrize("attention", ATTENTIONS)
def test_xla_training_on_the_pipeline_matches_the_uncompiled_loop(attention):
    compiled = fit_losses(attention, jit_compile=True)
    plain = fit_losses(attention, jit_compile=False)
    assert compiled[-1] < compiled[0]
    np.testing.assert_allclose(compiled, plain, rtol=1e-4)


@pytest.mark.heavy
@pytest.mark.tensorflow_only
def test_xla_training_of_a_gru_with_two_decoder_layers_and_bahdanau_order():
    losses = fit_losses("recurrent", jit_compile=True, cell="gru", decoder_layers=2,
                        attention_order="bahdanau", input_feeding="context")
    assert np.all(np.isfinite(losses)) and losses[-1] < losses[0]


def test_matrix_dense_gives_dense_outputs_for_every_rank():
    dense = keras.layers.Dense(3, use_bias=True)
    matrix = MatrixDense(3, use_bias=True)
    dense.build((None, None, 4))
    matrix.build((None, None, 4))
    matrix.set_weights(dense.get_weights())
    assert [v.path for v in matrix.weights] == [
        v.path.replace(dense.name, matrix.name) for v in dense.weights]
    rng = np.random.default_rng(0)
    for shape in [(5, 4), (2, 5, 4), (2, 3, 5, 4)]:
        x = rng.normal(size=shape).astype("float32")
        got = keras.ops.convert_to_numpy(matrix(x))
        assert got.shape == shape[:-1] + (3,)
        np.testing.assert_allclose(got, keras.ops.convert_to_numpy(dense(x)), atol=1e-6)


def test_jit_compile_config_values_and_errors():
    assert [jit_compile_arg(TrainConfig(jit_compile=v).jit_compile)
            for v in ("auto", "true", "false")] == ["auto", True, False]
    assert TrainConfig().override({"jit-compile": "true"}).jit_compile == "true"
    with pytest.raises(ValueError, match="auto, true, false|'auto', 'true', 'false'"):
        TrainConfig(jit_compile="yes")
