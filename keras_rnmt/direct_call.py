"""Calling a sublayer's `call` directly inside the decoder step, under PyTorch.

Keras' `Layer.__call__` wraps every call (input conversion and casting, the autocast scope,
name scopes, masks, build checks): about 0.5 ms a call on this project's CPU under the torch
backend, against 0.04 ms for the `call` it wraps (a 64 × 32 `Dense`). JAX and TensorFlow
trace the step once, so the wrapper costs them nothing per step; eager PyTorch pays it at
every target step, for the step cell, the attention layer and each of its projections.
Where the wrapper would change nothing, the step calls `layer.call` itself:

- the torch backend, and a real tensor (not a symbolic `KerasTensor`: building a
  functional model still goes through `__call__`);
- a built layer whose policy computes in its variables' dtype (float32), so no autocast
  scope or input cast is needed; under a mixed policy every call keeps `__call__`.
"""

import keras


def calls_directly(layer, inputs):
    """Whether `layer.call(inputs, ...)` may stand for `layer(inputs, ...)` here (above)."""
    if keras.backend.backend() != "torch" or not layer.built:
        return False
    policy = layer.dtype_policy
    if policy.compute_dtype != policy.variable_dtype:
        return False
    import torch

    return (isinstance(inputs, torch.Tensor)
            and keras.backend.standardize_dtype(inputs.dtype) == policy.compute_dtype)
