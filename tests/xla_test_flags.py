"""Print the XLA flags that `make test` gives the suite's processes, besides
`--xla_backend_optimization_level=0`: each candidate below that the installed XLAs accept.

    python tests/xla_test_flags.py      # e.g. "--xla_cpu_use_fusion_emitters=false"

`--xla_cpu_use_fusion_emitters=false` has XLA compile elementwise code with its older LLVM IR
emitters instead of its MLIR fusion emitters: the suite's tiny programs compile faster, and
compute the same math (results agree to float32 rounding, well within the tests'
tolerances). The JAX pass took 525 s with it against 792 s without, and
tests/models/test_deferred_scan.py alone 67 s against 119 s (2-core AVX2 AMD EPYC,
2026-12-07). XLA is retiring the older emitters, and JAX and TensorFlow each abort a process
whose `XLA_FLAGS` hold a flag their XLA does not know, so a flag is given only where a JAX
program and a TensorFlow `jit_compile` function both ran with it here, each in a process of
its own, the two side by side (about 10 s).
"""

import os
import subprocess
import sys

CANDIDATES = ["--xla_cpu_use_fusion_emitters=false"]

PROBES = {
    "jax": "import jax; jax.jit(lambda x: x + 1)(1.0).block_until_ready()",
    "tensorflow": ("import tensorflow as tf; "
                   "tf.function(lambda x: x + 1, jit_compile=True)(tf.constant(1.0))"),
}


def accepted(flag):
    """Whether XLA under JAX and under TensorFlow compiles a program with `flag` set."""
    env = dict(os.environ, XLA_FLAGS=flag, JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3",
               CUDA_VISIBLE_DEVICES="")
    probes = [subprocess.Popen([sys.executable, "-c", code], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
              for code in PROBES.values()]  # side by side
    return all([probe.wait() == 0 for probe in probes])


if __name__ == "__main__":
    print(" ".join(flag for flag in CANDIDATES if accepted(flag)))
