"""Does this machine compute a mixed-precision policy natively? A warning when it does not.

Keras' `mixed_bfloat16` and `mixed_float16` policies run the matmuls in 16 bits. On a CPU this
pays off only with native instructions (bfloat16: x86 AVX-512 BF16 or AMX-BF16, Arm BF16;
float16: x86 AVX-512 FP16 or AMX-FP16, Arm FP16 arithmetic). Without them the backends emulate
the type. Measured on an AVX2-only AMD EPYC host (benchmarks/RESULTS.md §1, 2026-11-25), SB
trained under mixed_bfloat16 at 0.04x float32's speed under PyTorch (50 vs 1,365 target
tokens/s), 0.79x under JAX and 1.04x under TensorFlow. On the project's AVX-512 BF16 host the
same policy trained 1.44x faster under TensorFlow. So `train_and_evaluate` and
`Translator` warn when asked for a 16-bit policy on a CPU that lacks the instructions, and
`set_matmul_precision("bfloat16")` warns there too (its products are bfloat16 dots).

    >>> emulated_precision_warning("float32") is None
    True
"""

import warnings

# /proc/cpuinfo flags (x86 "flags", Arm "Features") that compute each policy natively.
NATIVE_FLAGS = {
    "mixed_bfloat16": ("avx512_bf16", "amx_bf16", "bf16"),
    "mixed_float16": ("avx512_fp16", "amx_fp16", "fphp"),
}


def cpu_flags(path="/proc/cpuinfo"):
    """The CPU's feature flags as a set, or None where `path` does not list them (not Linux)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):
            return set(value.split())
    return None


def native_on_cpu(policy, flags=None):
    """True when the CPU computes `policy` (a key of `NATIVE_FLAGS`) natively, or when its
    flags cannot be read. `flags`: set of CPU flags; default: `cpu_flags()`."""
    flags = cpu_flags() if flags is None else flags
    return flags is None or bool(flags & set(NATIVE_FLAGS[policy]))


def accelerator_present():
    """True when the Keras backend computes on a GPU or TPU rather than the CPU."""
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.default_backend() != "cpu"
    if backend == "tensorflow":
        import tensorflow as tf

        return bool(tf.config.list_logical_devices("GPU") or tf.config.list_logical_devices("TPU"))
    if backend == "torch":
        import torch

        return torch.cuda.is_available()
    return False


def emulated_precision_warning(policy, flags=None, accelerator=None):
    """The warning for computing in `policy` here, or None.

    None for float32 (and any policy not in `NATIVE_FLAGS`), on an accelerator, on a CPU with
    one of the policy's native flags, or when the flags cannot be read.

    Args:
        policy: str, a Keras dtype policy name, e.g. "mixed_bfloat16".
        flags: set of CPU flags; default: `cpu_flags()`.
        accelerator: bool; default: `accelerator_present()`.
    """
    native = NATIVE_FLAGS.get(policy)
    if native is None or native_on_cpu(policy, flags):
        return None
    if accelerator_present() if accelerator is None else accelerator:
        return None
    return (f"dtype policy {policy!r} on a CPU without native {policy[6:]} matmuls (none of "
            f"the CPU flags {', '.join(native)}): the backend emulates it, which can be many "
            "times slower than float32 (PyTorch trained 27x slower on an AVX2 CPU). Use "
            "dtype_policy='float32' here.")


def emulated_matmul_precision_warning(precision, flags=None, accelerator=None):
    """The warning for `matmul_precision=precision` here, or None: as
    `emulated_precision_warning`, for the bfloat16 operands of
    `keras_rnmt.matmul_precision`, which need the flags of "mixed_bfloat16"."""
    if precision != "bfloat16" or emulated_precision_warning(
            "mixed_bfloat16", flags, accelerator) is None:
        return None
    native = NATIVE_FLAGS["mixed_bfloat16"]
    return (f"matmul_precision='bfloat16' on a CPU without native bfloat16 matmuls (none of "
            f"the CPU flags {', '.join(native)}): the backend emulates the bfloat16 products "
            "(XLA) or rounds their operands outside oneDNN (PyTorch), so expect them slower "
            "than float32, not faster (the option was measured only on an Intel CPU with AMX). "
            "Use matmul_precision='float32' here.")


def warn_if_emulated(policy):
    """Warn (RuntimeWarning) when `policy` would be emulated here; returns the message."""
    message = emulated_precision_warning(policy)
    if message:
        warnings.warn(message, RuntimeWarning, stacklevel=3)
    return message
