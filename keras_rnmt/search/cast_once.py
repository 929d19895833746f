"""Cast a mixed-precision model's weights once per search instead of at every step.

Under a mixed policy (e.g. "mixed_bfloat16") Keras stores float32 variables and casts each
one to the compute dtype whenever a layer reads it. A search loop reads every decoder
weight at every step, so it casts the whole decoder (the 512 x 7.9k output projection
alone is 4M values) once per step, and TensorFlow does not hoist the casts out of its
`while` loop. Inside `CastWeightsOnce(model)` a layer that would cast a variable reads a
copy cast when the scope was created: the same values, cast once.
"""

import contextlib

import keras
from keras import ops


class CastWeightsOnce(keras.StatelessScope):
    """Serve a model's autocast reads from copies cast once to its compute dtype.

    A `keras.StatelessScope` whose `get_current_value(variable)` returns the variable cast
    to the model's compute dtype when the read would cast it anyway (inside a layer's
    autocast scope, where `variable.dtype` is the compute dtype); every other read (variables
    that do not autocast, reads outside a layer call) gets what it would get without the
    scope. A model whose compute and variable dtypes agree gets a scope that changes nothing.
    Not for use inside another stateless scope (the JAX search passes its weights in one, and
    XLA hoists loop-invariant casts itself).

    Args:
        model: a built Keras model.

    Example:
    ```python
    with CastWeightsOnce(model):
        result = beam_search(model.search_step, state, ...)
    ```
    """

    def __init__(self, model):
        super().__init__()
        policy = model.dtype_policy
        self.compute_dtype = policy.compute_dtype
        self._copies = {}
        if policy.compute_dtype != policy.variable_dtype:
            for variable in model.variables:
                if variable.dtype == policy.variable_dtype:
                    self._copies[id(variable)] = ops.cast(variable.value, policy.compute_dtype)

    def get_current_value(self, variable):
        copy = self._copies.get(id(variable))
        if copy is not None and variable.dtype == self.compute_dtype:
            return copy
        return super().get_current_value(variable)  # a value written inside this scope


def cast_weights_once(model):
    """`CastWeightsOnce(model)` where it saves work, else a scope that does nothing.

    It saves work under a mixed policy on TensorFlow and PyTorch. Under JAX the compiled
    search already reads the weights from its own stateless scope and XLA hoists the casts.
    """
    policy = model.dtype_policy
    if keras.backend.backend() == "jax" or policy.compute_dtype == policy.variable_dtype:
        return contextlib.nullcontext()
    return CastWeightsOnce(model)
