"""`log_softmax` as z − logsumexp(z): the form after which XLA's CPU backend multiplies fast."""

import keras
from keras import ops


def log_softmax(logits, axis=-1):
    """log softmax(z) = z − log Σ_v exp(z_v), the same function as ``keras.ops.log_softmax``.

    Written as ``z - logsumexp(z)`` because of how XLA's CPU backend (JAX) compiles the
    other form after the output projection: ``jax.nn.log_softmax(x @ W)`` fuses the matmul
    with the row maximum and the subtraction into one YNNPACK fusion that multiplies at
    about half speed. On SB's search step (320 × 512 by 512 × 7,859, the Intel AMX host)
    that form took 12.4-13.1 ms against 7.0 ms for the matmul alone, and this one 8.2 ms;
    a beam step of 64 sentences 20.7 ms against 26.9 (benchmarks/RESULTS.md §2,
    "Changes 11-12"). The training loss keeps ``keras.ops.log_softmax``: there this form made
    the JAX step 2-6% slower (301 and 303 against 308 and 320 ms). logsumexp subtracts the
    maximum too, so large logits do not overflow. The price is one rounding:
    z − (m + log Σ exp(z − m)) loses up to about one ulp of the largest logit (float32:
    2e-6 at 30, 6e-5 at 1,000), the rounding such a logit already carries; the gradient is
    the same.

    Args:
        logits: float tensor (..., V).
        axis: int. The axis to normalise over. Defaults to -1.

    Returns:
        Tensor of ``logits``' shape and dtype: log-probabilities along ``axis``.
    """
    logits = ops.convert_to_tensor(logits)
    if keras.backend.backend() == "torch":
        # Eager PyTorch runs log_softmax as one kernel; with the two-op form (and the
        # pass-through state not reordered) its beam search ran 5-9% slower in three
        # alternating pairs (RESULTS.md §2, "Changes 11-12").
        return ops.log_softmax(logits, axis=axis)
    return ops.subtract(logits, ops.logsumexp(logits, axis=axis, keepdims=True))
