"""`keep_freed_memory`: glibc keeps freed blocks, so a loop of large temporaries stops
faulting new pages in; the CLI sets it under PyTorch and TensorFlow only."""

import subprocess
import sys

import keras

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


def test_the_cli_keeps_freed_memory_under_torch_and_tensorflow_only(monkeypatch):
    calls = []
    monkeypatch.setattr(malloc, "keep_freed_memory", lambda: calls.append(1) or True)
    expected = keras.backend.backend() in ("torch", "tensorflow")
    assert cli.keep_freed_memory_for_backend() == expected
    assert calls == ([1] if expected else [])


def test_the_cli_calls_it_before_the_command(monkeypatch):
    order = []
    monkeypatch.setattr(cli, "keep_freed_memory_for_backend", lambda: order.append("malloc"))
    monkeypatch.setattr(cli, "cmd_quickstart", lambda args, extra: order.append("command"))
    cli.main(["quickstart"])
    assert order == ["malloc", "command"]
