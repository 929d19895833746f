"""Keep freed memory in the process, so a training or search step's temporaries reuse pages.

glibc's ``malloc`` serves every block over its mmap threshold (128 KiB at start, rising to
32 MiB as blocks are freed) with a fresh ``mmap`` and unmaps it on ``free``, and returns the
top of the heap to the system above 128 KiB free. PyTorch's CPU allocator and TensorFlow's
eager kernels allocate their larger temporaries (a batch's logits, 64 × 14 × 7,859 floats,
are 28 MB) from ``malloc`` at every step, so every step maps them afresh and the kernel
zero-fills each new page on its first write: 17,000-22,000 minor page faults a PyTorch SB
training step, 250,000 over a PyTorch beam search of 256 sentences (benchmarks/RESULTS.md §1,
"Freed memory kept in the process").

`keep_freed_memory` sets ``M_MMAP_MAX`` = 0 (no block gets its own mapping: every block
comes from the heap) and ``M_TRIM_THRESHOLD`` = 2 GiB − 1 (freed memory stays in the heap),
as ``GLIBC_TUNABLES=glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=2147483647`` would at
start. The faults fall to about none, and on the Intel AMX host a PyTorch beam search ran
about 12% faster, PyTorch and TensorFlow training steps 3-4%. The cost: the process keeps
what it freed, up to 2 GiB above its live memory, and a freed block in the middle of the
heap can only be reused, not returned. ``M_ARENA_MAX`` is left alone: one arena for every
thread made XLA's compilation 25-35% slower (RESULTS.md §1, "Page faults of a step's
temporaries").

JAX's CPU client runs a compiled program on a thread of its own by default (asynchronous
dispatch), and XLA allocates the program's temporaries there, from that thread's arena: an
arena other than the main one grows in heaps of at most 64 MiB, so SB's 200 MB block of
temporaries is mapped afresh at every step whatever ``mallopt`` says (49,000 minor page
faults a step). `keep_freed_memory_for_backend` therefore also turns JAX's asynchronous CPU
dispatch off (``jax_cpu_enable_async_dispatch``), before the backend starts: the program runs
on the calling thread, its temporaries come from the main heap and stay there, and the faults
fall to none. On the 2-core AVX2 host a SB training step at length 14 took about 600 ms
instead of 730, and SB trained 1.39× as fast on real batches (RESULTS.md §1, "The JAX
step's temporaries on the main heap"); neither setting alone changed anything. What
asynchronous dispatch gave up: Python's next dispatch no longer overlaps the running
program, a few milliseconds a call.

`keep_freed_memory_for_backend` is called by `keras-rnmt` (`keras_rnmt.cli.main`) and the
benchmark workers at their start, and a program that uses the library directly may do the
same, before its first JAX computation.
"""

import ctypes
import ctypes.util
import sys

# mallopt's parameter numbers (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
TRIM_THRESHOLD = 2**31 - 1

_done = False


def keep_freed_memory():
    """Have glibc's ``malloc`` keep freed memory and map no block of its own (module docstring).

    Idempotent; a no-op off Linux or where the C library is not glibc.

    Returns:
        bool. Whether the settings are in force (glibc took both).

    Example:
    >>> keep_freed_memory() in (True, False)
    True
    """
    global _done
    if _done:
        return True
    mallopt = _glibc_mallopt()
    if mallopt is None:
        return False
    _done = bool(mallopt(M_MMAP_MAX, 0)) and bool(mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done


def _glibc_mallopt():
    """glibc's ``mallopt`` as a ctypes function, or None where there is none."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
        if not hasattr(libc, "gnu_get_libc_version"):  # not glibc (musl's mallopt does nothing)
            return None
    except (OSError, AttributeError):
        return None
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return mallopt


def keep_freed_memory_for_backend():
    """Have glibc keep freed memory (`keep_freed_memory`), and under JAX run CPU programs on
    the calling thread so that their temporaries come from the heap that keeps it (module
    docstring).

    Under JAX it must run before the backend starts (the first array or computation); later,
    dispatch can no longer change and nothing is set.

    Returns:
        bool. Whether the settings are in force.
    """
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        try:  # JAX's own switches (0.10): a JAX without them is left as it is
            from jax._src import xla_bridge

            started = xla_bridge.backends_are_initialized()
            synchronous = not xla_bridge._CPU_ENABLE_ASYNC_DISPATCH.value
        except (ImportError, AttributeError):
            return False
        if started:
            return bool(_done and synchronous)
        if not keep_freed_memory():
            return False
        jax.config.update("jax_cpu_enable_async_dispatch", False)
        return True
    if backend not in ("torch", "tensorflow"):
        return False
    return keep_freed_memory()
