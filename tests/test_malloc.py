"""`keep_freed_memory`: glibc keeps freed blocks, so a loop of large temporaries stops
faulting new pages in; the CLI sets it under every backend, and under JAX it also runs CPU
programs on the calling thread, whose heap keeps them."""

import os
import subprocess
import sys

import keras
import pytest

import keras_rnmt.cli as cli
from keras_rnmt import malloc

# A child process mallocs, writes and frees a 64 MiB block ten times (above glibc's largest
# dynamic mmap threshold, 32 MiB, so without the setting each gets a fresh mapping) and
# prints the minor page faults of the loop.
# The child loads malloc.py by its path, without the package: importing `keras_rnmt` imports
# Keras and the backend, 6-8 s of the test's 12-17 s in each pass (2 cores).
FAULTS = """
import ctypes, importlib.util, resource, sys
spec = importlib.util.spec_from_file_location("malloc", sys.argv[2])
malloc = importlib.util.module_from_spec(spec)
spec.loader.exec_module(malloc)
keep_freed_memory = malloc.keep_freed_memory
if sys.argv[1] == "keep":
    assert keep_freed_memory() and keep_freed_memory()
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def temporary():
    block = libc.malloc(64 << 20)
    ctypes.memset(block, 1, 64 << 20)
    libc.free(block)
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
temporary()
before = faults()
for _ in range(10):
    temporary()
print(faults() - before)
"""


def loop_faults(mode):
    result = subprocess.run([sys.executable, "-c", FAULTS, mode, malloc.__file__],
                            capture_output=True, text=True, check=True)
    return int(result.stdout.split()[-1])


def test_freed_blocks_are_reused_instead_of_faulted_in_again():
    assert sys.platform.startswith("linux"), "this suite runs on Linux (glibc)"
    pages = (64 << 20) // 4096  # 16,384 pages a block at 4 KiB (fewer with huge pages)
    default, kept = loop_faults("default"), loop_faults("keep")
    assert default > 2 * pages, default  # every block mapped and zero-filled afresh
    assert kept < pages // 10, kept  # the first block's pages, reused


# A child process under JAX runs a compiled program with a 64 MiB temporary (the (4096, 4096)
# product of a (4096, 16) and a (16, 4096) matrix, reduced by a second product) five times
# to warm up, then twenty times, and prints the minor page faults of the twenty, with
# `keep_freed_memory_for_backend` called first ("keep") or not.
JAX_FAULTS = """
import os, resource, sys
os.environ["KERAS_BACKEND"] = "jax"
from keras_rnmt.malloc import keep_freed_memory_for_backend
if sys.argv[1] == "keep":
    assert keep_freed_memory_for_backend()
import jax, jax.numpy as jnp
from jax._src import xla_bridge
program = jax.jit(lambda a, b, v: (a @ b) @ v)
a, b, v = jnp.ones((4096, 16)), jnp.ones((16, 4096)), jnp.ones((4096, 1))
for _ in range(5):
    program(a, b, v).block_until_ready()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    program(a, b, v).block_until_ready()
after = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
# Too late once the backend runs: nothing changes, and it says whether the settings hold.
assert keep_freed_memory_for_backend() == (sys.argv[1] == "keep")
print(xla_bridge._CPU_ENABLE_ASYNC_DISPATCH.value, after - before)
"""


# The child runs under JAX whatever this pass's backend, so once, in the jax pass.
@pytest.mark.backends("jax")
def test_under_jax_a_programs_temporaries_stay_on_the_main_heap():
    pages = (64 << 20) // 4096
    runs = {}
    for mode in ("default", "keep"):
        result = subprocess.run([sys.executable, "-c", JAX_FAULTS, mode], capture_output=True,
                                text=True, env=dict(os.environ, KERAS_BACKEND="jax"))
        assert result.returncode == 0, result.stderr[-3000:]
        asynchronous, faults = result.stdout.split()[-2:]
        runs[mode] = asynchronous, int(faults)
    # By default the program runs on a dispatch thread, whose arena maps the block afresh
    # every call, whatever mallopt says. Kept, the heap grows by a block in the first two to
    # four calls after the settings, then about never (one call in 100 measured).
    assert runs["default"][0] == "True" and runs["default"][1] > 18 * pages, runs
    assert runs["keep"][0] == "False" and runs["keep"][1] < 3 * pages, runs


def test_the_cli_keeps_freed_memory_under_every_backend(monkeypatch):
    calls = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append(1) or True)
    if keras.backend.backend() == "jax":
        # This process's backend already runs (the tests before it): too late to change its
        # dispatch, so nothing is set; the child process above checks the JAX case.
        keras.ops.ones(1)
        assert not cli.keep_freed_memory_for_backend() and calls == []
        return
    assert cli.keep_freed_memory_for_backend() and calls == [1]


def test_the_cli_calls_it_before_the_command(monkeypatch):
    order = []
    monkeypatch.setattr(cli, "keep_freed_memory_for_backend", lambda: order.append("malloc"))
    monkeypatch.setattr(cli, "use_compilation_cache", lambda: order.append("cache"))
    monkeypatch.setattr(cli, "cmd_quickstart", lambda args, extra: order.append("command"))
    cli.main(["quickstart"])
    assert order == ["malloc", "cache", "command"]
