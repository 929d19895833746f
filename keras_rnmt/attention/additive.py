"""The additive score `v_a^T tanh(keys + U_a s [+ extra])`, recomputed in JAX's backward pass."""

import keras
from keras import ops


def additive_energies(energy, keys, projected_query, extra=None):
    """Additive (MLP) attention energies, Yang et al. Eq. 5 (Eq. 11 with `extra`).

        e_ij = v_a^T tanh(W_a h_i + U_a s_j [+ extra_ij])

    Under JAX the function runs inside `keras.remat` (`jax.checkpoint`): its backward pass
    recomputes `tanh(...)` from `keys` and `U_a s_j` instead of keeping it. Inside the
    decoder's `scan` that saves two stacked `(T, B, S, units)` residual buffers per training
    step, which XLA zero-fills and writes at every step; the recomputation is one add and
    one tanh over `(B, S, units)`. SB's JAX training step on real Multi30k batches ran 1.08x
    faster (`benchmarks/RESULTS.md` §1, "Recomputing the additive score"). TensorFlow's
    `recompute_grad` fails inside the decoder's `while_loop` and PyTorch runs eagerly, where
    recomputing only adds work, so there it is a plain call.

    Args:
        energy: the `v_a` layer, `units -> 1`.
        keys: `W_a h`, tensor `(B, S, units)`.
        projected_query: `U_a s_j`, tensor `(B, units)`.
        extra: optional tensor `(B, S, units)` added inside the tanh (the dynamic memory
            term of Yang et al. Eq. 11, the coverage term of Tu et al.).

    Returns:
        Tensor `(B, S)`.
    """

    def energies(keys, projected_query, *extra):
        hidden = keys + projected_query[:, None, :]
        for term in extra:
            hidden = hidden + term
        return ops.squeeze(energy(ops.tanh(hidden)), axis=-1)

    if keras.backend.backend() == "jax":
        energies = keras.remat(energies)
    return energies(keys, projected_query, *(() if extra is None else (extra,)))
