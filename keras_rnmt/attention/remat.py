"""`recomputed_under_jax`: a function whose backward pass recomputes it (JAX only)."""

import keras


def recomputed_under_jax(fn):
    """`fn` wrapped in `keras.remat` (`jax.checkpoint`) under JAX, else `fn` itself.

    Inside the decoder's `scan`, JAX keeps every intermediate the backward pass needs, for
    every target step, in stacked `(T, ...)` buffers that XLA zero-fills and writes at each
    step. For the per-source-word parts of an attention step (the additive score's tanh,
    the dynamic memory's LSTM gates: `(B, S, ...)` each) recomputing them in the backward
    pass is cheaper than storing them (`benchmarks/RESULTS.md` §1, "Recomputing the additive
    score"). TensorFlow's `recompute_grad` fails inside the decoder's `while_loop`, and
    PyTorch runs eagerly, where recomputing only adds work: there `fn` runs as is.

    Args:
        fn: a function of tensors (it may call Keras layers).

    Returns:
        A function with the same signature and the same values and gradients.
    """
    if keras.backend.backend() == "jax":
        return keras.remat(fn)
    return fn
