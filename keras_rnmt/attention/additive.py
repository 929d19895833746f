"""The additive score `v_a^T tanh(keys + U_a s [+ extra])`, recomputed in JAX's backward pass."""

from keras import ops

from keras_rnmt.attention.remat import recomputed_under_jax


def additive_energies(energy, keys, projected_query, extra=None, extra_projection=None):
    """Additive (MLP) attention energies, Yang et al. Eq. 5 (Eq. 11 with `extra`).

        e_ij = v_a^T tanh(W_a h_i + U_a s_j [+ extra_ij])

    Under JAX (`recomputed_under_jax`) the backward pass recomputes `tanh(...)` from `keys`
    and `U_a s_j` instead of keeping it: inside the decoder's `scan` that saves two stacked
    `(T, B, S, units)` residual buffers per training step for one add and one tanh over
    `(B, S, units)` per step. SB's JAX training step on real Multi30k batches ran 1.08x
    faster (`benchmarks/RESULTS.md` §1, "Recomputing the additive score").

    Args:
        energy: the `v_a` layer, `units -> 1`.
        keys: `W_a h`, tensor `(B, S, units)`.
        projected_query: `U_a s_j`, tensor `(B, units)`.
        extra: optional tensor `(B, S, units)` added inside the tanh (the dynamic memory
            term of Yang et al. Eq. 11, the coverage term of Tu et al.), or `(B, S, d)` with
            `extra_projection`.
        extra_projection: optional layer `d -> units` applied to `extra` inside the
            recomputed function (`W_d` of Eq. 11 on the memory `d_ij`), so that the backward
            pass keeps `extra` instead of its projection: with a memory of 128 units, a
            quarter of the `(B, S, units)` a step would otherwise store.

    Returns:
        Tensor `(B, S)`.
    """

    def energies(keys, projected_query, extra):
        hidden = keys + projected_query[:, None, :]
        if extra is not None:
            hidden = hidden + (extra if extra_projection is None else extra_projection(extra))
        return ops.squeeze(energy(ops.tanh(hidden)), axis=-1)

    return recomputed_under_jax(energies)(keys, projected_query, extra)
