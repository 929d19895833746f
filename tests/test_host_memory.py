"""keep_freed_memory: a freed 64 MiB block is reused, not page-faulted in again."""

import os
import platform
import subprocess
import sys

import pytest

BLOCK_PAGES = (64 << 20) // 4096

# malloc, fill and free 64 MiB three times (numpy would ask for huge pages); print the minor page faults of the
# last two rounds (the first may grow the heap).
SCRIPT = """
import ctypes, resource, sys
from keras_rnmt.host_memory import keep_freed_memory
applied = keep_freed_memory() if sys.argv[1] == "keep" else None
libc = ctypes.CDLL("libc.so.6")
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
faults = []
for _ in range(3):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    block = libc.malloc(64 << 20)
    ctypes.memset(block, 1, 64 << 20)
    libc.free(block)
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(applied, faults[1], faults[2])
"""

glibc_linux = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and platform.libc_ver()[0] == "glibc"),
    reason="mallopt is glibc's (Linux)")


def run(mode, **env):
    result = subprocess.run([sys.executable, "-c", SCRIPT, mode], capture_output=True,
                            text=True, check=True, env={**os.environ, **env})
    applied, *faults = result.stdout.split()
    return applied, [int(f) for f in faults]


@glibc_linux
def test_a_freed_block_is_reused_without_page_faults():
    _, faults = run("default")
    assert min(faults) > BLOCK_PAGES // 2, faults  # glibc maps and unmaps it every round
    applied, faults = run("keep")
    assert applied == "True"
    assert max(faults) < BLOCK_PAGES // 100, faults


@glibc_linux
def test_the_environment_variable_turns_it_off():
    applied, faults = run("keep", KERAS_RNMT_KEEP_FREED_MEMORY="0")
    assert applied == "False"
    assert min(faults) > BLOCK_PAGES // 2, faults


def test_without_glibc_nothing_changes(monkeypatch):
    from keras_rnmt import host_memory

    monkeypatch.setattr(host_memory.sys, "platform", "darwin")
    assert host_memory.keep_freed_memory() is False
