"""`compile_search`: one search function compiled for the backend, reading the model's
current weights at every call; `shared_programs`: the compiled searches a model's
`Translator`s share."""

import keras
from keras import ops, tree


def compile_search(run, jit_compile=False):
    """Compile `run(*args)` for the backend: tf.function (with XLA if `jit_compile`), jax.jit
    or eager torch.

    The compiled callable takes `(model, *args)`; numpy arguments become tensors. Under JAX
    the model's variables are passed in as arguments (a `StatelessScope`), so the compiled
    program does not bake the weights in as constants.
    """
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        # No autograph: the search is explicit ops (it runs under jax.jit, which has none),
        # and converting it took a third of the first translation's trace.
        compiled = tf.function(run, reduce_retracing=True, jit_compile=jit_compile,
                               autograph=False)
        return lambda model, *args: compiled(*tf.nest.map_structure(tf.convert_to_tensor, args))
    if backend == "jax":
        import jax

        def stateless(values, args, model):
            with keras.StatelessScope(state_mapping=list(zip(model.variables, values))):
                return run(*args)

        jitted = jax.jit(stateless, static_argnums=(2,))
        return lambda model, *args: jitted([v.value for v in model.variables], args, model)

    def eager(model, *args):
        import torch

        with torch.no_grad():
            return run(*tree.map_structure(ops.convert_to_tensor, args))

    return eager


_CACHE = "_keras_rnmt_search_programs"


def shared_programs(model):
    """The dict of compiled search programs kept on `model`, shared by all its `Translator`s.

    Tracing a beam search takes seconds under TensorFlow (7 s for a tiny model on a 2-core
    CPU) and a compile under JAX; a second `Translator` of the same model (a BLEU callback's
    every epoch, a replacing and a plain one, another batch size) with the same search
    options reuses the programs instead. The caller keys them by everything they were traced
    with. The dict is stored outside Keras' attribute tracking, so it is neither saved nor
    counted as a layer's state; it lives and dies with the model.

    Args:
        model: a Keras model.

    Returns:
        dict, empty for a model not searched yet; clear it to trace again.
    """
    programs = model.__dict__.get(_CACHE)
    if programs is None:
        programs = {}
        object.__setattr__(model, _CACHE, programs)
    return programs
