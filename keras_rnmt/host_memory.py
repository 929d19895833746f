"""Keep freed host memory mapped, so that large buffers are not page-faulted in every step.

A compiled training step allocates its temporaries as one block: 200 MB for SB under JAX
(XLA's buffer assignment). glibc's `malloc` serves a block over 32 MiB with a fresh `mmap`
and unmaps it on `free`, so every step touches 200 MB of new pages: 49,000 minor page
faults a step (4 KiB each), each a kernel entry and a zeroed page. TensorFlow's and
PyTorch's large tensors go the same way (14,000 and 27,000-34,000 faults a SB step).

`keep_freed_memory()` asks glibc (`mallopt`) to serve every size from its heap
(`M_MMAP_MAX = 0`), to keep up to 2 GiB of freed memory instead of returning it
(`M_TRIM_THRESHOLD`), and to give every thread the one heap (`M_ARENA_MAX = 1`; a thread's
own arena cannot hold a 200 MB block and would map it anyway). Steps then reuse the pages
of the step before: 0-2 faults a JAX step, 23-113 under TensorFlow, 227-344 under PyTorch.
The SB step under JAX took 324-336 ms against 332-354 ms (alternating processes, the Intel
AMX host; `benchmarks/RESULTS.md` §1, "Freed memory kept mapped").

The cost: the process keeps its peak heap (freed memory is reused, not returned to the
system). Call it before the first computation: an XLA or TensorFlow worker thread that has
already allocated keeps its own arena. `keras-rnmt` does so for every command; set
`KERAS_RNMT_KEEP_FREED_MEMORY=0` to leave `malloc` as it is.
"""

import ctypes
import ctypes.util
import os
import sys

# mallopt parameters (glibc's malloc.h).
M_TRIM_THRESHOLD = -1
M_MMAP_MAX = -4
M_ARENA_MAX = -8
TRIM_THRESHOLD = 2**31 - 1  # mallopt takes an int: 2 GiB
ENV = "KERAS_RNMT_KEEP_FREED_MEMORY"


def keep_freed_memory():
    """Tell glibc's `malloc` to keep and reuse freed memory (see the module docstring).

    Returns:
        True if glibc accepted the three settings; False where there is no glibc (macOS,
        Windows, musl) or `KERAS_RNMT_KEEP_FREED_MEMORY=0`, and nothing was changed.
    """
    if os.environ.get(ENV, "1") == "0" or not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        gnu_get_libc_version = libc.gnu_get_libc_version  # only glibc has it
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    del gnu_get_libc_version
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    settings = ((M_MMAP_MAX, 0), (M_TRIM_THRESHOLD, TRIM_THRESHOLD), (M_ARENA_MAX, 1))
    return all(mallopt(param, value) == 1 for param, value in settings)
