"""`CastWeightsOnce`: the reads a mixed policy would cast, served from copies cast once."""

import keras
import numpy as np
from keras import ops

from keras_rnmt.search.cast_once import CastWeightsOnce, cast_weights_once


def mixed_block():
    """Dense -> LayerNormalization (whose variables do not autocast) in mixed_bfloat16."""
    inputs = keras.Input((6,))
    hidden = keras.layers.Dense(8, dtype="mixed_bfloat16")(inputs)
    outputs = keras.layers.LayerNormalization(dtype="mixed_bfloat16")(hidden)
    model = keras.Model(inputs, outputs)
    model.dtype_policy = "mixed_bfloat16"
    dense, norm = model.layers[1:]
    dense.kernel.assign(np.random.default_rng(0).normal(size=(6, 8)))
    norm.gamma.assign(np.linspace(0.5, 1.5, 8))
    return model, dense, norm


def test_same_outputs_and_bfloat16_copies_only_for_autocast_reads():
    model, dense, norm = mixed_block()
    x = np.random.default_rng(1).normal(size=(3, 6)).astype("float32")
    expected = ops.convert_to_numpy(ops.cast(model(x), "float32"))
    scope = CastWeightsOnce(model)
    with scope:
        got = ops.convert_to_numpy(ops.cast(model(x), "float32"))
        # Outside a layer call nothing autocasts: the float32 variable is read as it is.
        assert scope.get_current_value(dense.kernel) is None
        assert keras.backend.standardize_dtype(dense.kernel.value.dtype) == "float32"
    np.testing.assert_array_equal(got, expected)
    # Copies of every float32 variable, read only where the layer casts (Dense, not the
    # LayerNormalization's gamma and beta, which do not autocast).
    copy = scope._copies[id(dense.kernel)]
    assert keras.backend.standardize_dtype(copy.dtype) == "bfloat16"
    np.testing.assert_array_equal(ops.convert_to_numpy(ops.cast(copy, "float32")),
                                  ops.convert_to_numpy(ops.cast(ops.cast(dense.kernel.value,
                                                                         "bfloat16"), "float32")))


def test_a_float32_model_needs_no_scope():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    assert CastWeightsOnce(model)._copies == {}
    with cast_weights_once(model) as scope:
        assert scope is None  # a do-nothing context, not a stateless scope


class ReadRecorder(keras.layers.Dense):
    """A Dense layer that records what its kernel reads as during each call."""

    def call(self, inputs):
        self.reads.append(self.kernel.value)
        return super().call(inputs)


def test_every_read_in_a_layer_call_is_the_copy_made_once():
    layer = ReadRecorder(4, dtype="mixed_bfloat16")
    layer.reads = []
    layer.build((None, 3))
    x = np.ones((2, 3), "float32")
    with CastWeightsOnce(layer) as scope:
        layer(x)
        layer(x)
    copy = scope._copies[id(layer.kernel)]
    assert layer.reads[0] is copy and layer.reads[1] is copy  # no cast per read
    layer(x)  # outside the scope: cast again at the read
    assert layer.reads[2] is not copy
    assert keras.backend.standardize_dtype(layer.reads[2].dtype) == "bfloat16"
    if keras.backend.backend() == "tensorflow":
        assert_tensorflow_loop_body_reads_no_variables()


def assert_tensorflow_loop_body_reads_no_variables():
    """In a traced `while` loop the scope moves the weight reads (and casts) before it."""
    import tensorflow as tf

    model, dense, _ = mixed_block()

    def loop(x):
        def body(i, h):
            return ops.cast(ops.tanh(dense(h)[:, :6]), "float32") + h

        return keras.ops.fori_loop(0, 3, body, x)

    def reads_in_loop_body(scoped):
        @tf.function
        def run(x):
            if scoped:
                with cast_weights_once(model):
                    return loop(x)
            return loop(x)

        graph = run.get_concrete_function(tf.TensorSpec([2, 6], "float32")).graph
        library = graph.as_graph_def().library.function
        bodies = [f for f in library if "body" in f.signature.name]
        assert bodies
        return sum(node.op == "ReadVariableOp" for f in bodies for node in f.node_def)

    assert reads_in_loop_body(scoped=False) == 2  # kernel and bias, read and cast every step
    assert reads_in_loop_body(scoped=True) == 0  # read and cast once, before the loop
