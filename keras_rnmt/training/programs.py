"""`release_compiled_programs()`: free the training's compiled programs before test decoding.

Under JAX (and TensorFlow with XLA) every distinct batch shape compiles its own program, and
XLA's CPU backend maps each compiled kernel into memory separately: about 3 memory mappings
per kernel, a few hundred per training step program. Linux caps a process at
`vm.max_map_count` mappings (65,530 by default), and past the cap LLVM's JIT fails with
"LLVM compilation error: Cannot allocate memory" and the process dies (SIGSEGV).

Measured on Multi30k with `recipes/multi30k.py` at bucket width 1 under JAX (2026-11-29):
Bahdanau's process held 50,931 mappings after its first epoch (one training program per
length bucket and batch size, one validation-loss program per bucket, the greedy
validation search), and recurrent k=5's process, with larger programs, died when the
beam-5 test decoding compiled its programs (about 5,400 mappings more) after 12 epochs of
training. The training programs are not needed once training has ended, so
`train_and_evaluate` releases them first.
"""

import gc

import keras


def release_compiled_programs():
    """Drop the compiled programs no live object needs any more, and under JAX every
    cached one (`jax.clear_caches()`: later calls compile again).

    Returns:
        The number of this process's memory mappings afterwards (Linux), else None.
    """
    gc.collect()
    if keras.backend.backend() == "jax":
        import jax

        jax.clear_caches()
        gc.collect()
    return memory_mappings()


def memory_mappings():
    """The number of this process's memory mappings (`/proc/self/maps`), None off Linux."""
    try:
        with open("/proc/self/maps") as f:
            return sum(1 for _ in f)
    except OSError:
        return None
