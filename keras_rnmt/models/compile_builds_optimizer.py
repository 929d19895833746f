"""`CompileBuildsOptimizer`: `compile` creates the optimizer's variables, so TensorFlow traces
the first training step once instead of twice."""

import contextlib

import keras


class CompileBuildsOptimizer:
    """Mixin for a built (functional) `keras.Model`: `compile` also builds the optimizer.

    Keras builds the optimizer (Adam's moments, a loss-scale optimizer's scale) the first
    time it applies gradients. Under TensorFlow without a distribution strategy that is
    inside the first traced `train_step`, and a `tf.function` whose first trace creates
    variables is traced a second time: the whole step (encoder, the decoder's loop, their
    gradients) was traced twice. Building the optimizer here, on the model's trainable
    variables, leaves one trace. Under TensorFlow on a 2-core AMD EPYC, compiling SB's first
    training step (one batch shape) took 5.6 s instead of 9.1 s (`benchmarks/train_worker.py
    --steps 1 --warmup 0 --length 20`), and the test suite's TensorFlow pass 1,015 s instead
    of 1,113 s. JAX and PyTorch build the optimizer before their first step anyway; this
    only moves it earlier.

    As with Keras itself, changing `layer.trainable` needs a new `compile`.
    """

    def compile(self, *args, **kwargs):
        super().compile(*args, **kwargs)
        optimizer = getattr(self, "optimizer", None)
        if optimizer is None or optimizer.built or not self.built:
            return
        # Under TensorFlow, a `tf.distribute` model's variables are created in its strategy.
        scope = (self.distribute_strategy.scope() if keras.backend.backend() == "tensorflow"
                 else contextlib.nullcontext())
        with scope:
            optimizer.build(self.trainable_variables)

    def compile_from_config(self, config):
        # Keras' loading skips (with a warning) the compile of a model that overrides
        # `compile`; this one only adds the optimizer build Keras' own loading does too.
        self.compile(**keras.saving.deserialize_keras_object(config))
