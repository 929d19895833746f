"""`compile_search`: one search function compiled for the backend, reading the model's
current weights at every call."""

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
