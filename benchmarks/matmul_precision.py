"""float32 vs bfloat16 matmul speed per backend on this CPU, at SB's shapes.

    python benchmarks/matmul_precision.py        # about a minute
    python benchmarks/matmul_precision.py --shapes 64x128x256   # other shapes (MxKxN)
    python benchmarks/matmul_precision.py --backends jax torch  # some backends only

For each backend (a subprocess with its `KERAS_BACKEND`) and each shape: the numpy-style
2048x2048 peak shape, the decoder LSTM's per-step matmul in training (64 x 1280 by
1280 x 2048) and the vocabulary projection of a training batch (960 x 512 by 512 x 7936),
the best of 3 × 20 compiled calls (tf.function, jax.jit, eager torch), in GFLOP/s.
Mixed precision pays off on a backend only where its bfloat16 matmul beats float32.
"""

import argparse
import json
import os
import subprocess
import sys
import time

SHAPES = ((2048, 2048, 2048), (64, 1280, 2048), (960, 512, 7936))
BACKENDS = ("tensorflow", "jax", "torch")


def measure(shapes):
    """In a worker: GFLOP/s of each (m, k, n) shape in float32 and bfloat16 for
    KERAS_BACKEND."""
    import keras
    from keras import ops

    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        matmul = tf.function(lambda a, b: tf.matmul(a, b))
    elif backend == "jax":
        import jax

        matmul = jax.jit(lambda a, b: a @ b)
    else:
        matmul = ops.matmul
    figures = {}
    for m, k, n in shapes:
        for dtype in ("float32", "bfloat16"):
            a = ops.cast(keras.random.normal((m, k)), dtype)
            b = ops.cast(keras.random.normal((k, n)), dtype)
            ops.convert_to_numpy(ops.cast(matmul(a, b), "float32"))
            best = float("inf")
            for _ in range(3):
                start = time.perf_counter()
                for _ in range(20):
                    result = matmul(a, b)
                ops.convert_to_numpy(ops.cast(result[:1, :1], "float32"))
                best = min(best, (time.perf_counter() - start) / 20)
            figures[f"{m}x{k}x{n} {dtype}"] = round(2 * m * k * n / best / 1e9, 4)
    print("RESULT " + json.dumps(figures), flush=True)


def shape(text):
    """`MxKxN` -> (m, k, n)."""
    try:
        m, k, n = (int(size) for size in text.split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"a shape is MxKxN, e.g. 64x1280x2048; got {text!r}") from None
    return m, k, n


def main(argv=None):
    from sb import matmul_peak

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="+", type=shape, default=list(SHAPES),
                        help="matmul shapes MxKxN (default: the 2048 cube and SB's two)")
    parser.add_argument("--backends", nargs="+", choices=BACKENDS, default=list(BACKENDS),
                        help="the backends to measure, in this order (default: all three)")
    args = parser.parse_args(argv)
    shapes = [f"{m}x{k}x{n}" for m, k, n in args.shapes]
    print(f"numpy float32 2048x2048: {matmul_peak() / 1e9:.0f} GFLOP/s")
    from keras_rnmt.precision import NATIVE_FLAGS, emulated_precision_warning

    if emulated_precision_warning("mixed_bfloat16", accelerator=False):
        # Measured 2026-11-25 on an AVX2 host: TensorFlow's emulated bfloat16 2048 cube ran
        # one thread for over 9 minutes; PyTorch's bfloat16 matmuls at 0-1 GFLOP/s.
        print(f"note: this CPU has no native bfloat16 (none of "
              f"{', '.join(NATIVE_FLAGS['mixed_bfloat16'])}): the bfloat16 figures measure "
              "emulation, and large shapes take minutes", flush=True)
    for backend in args.backends:
        env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
        process = subprocess.run([sys.executable, __file__, "--worker", *shapes], env=env,
                                 capture_output=True, text=True)
        lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
        if not lines:
            raise SystemExit(f"{backend} worker failed:\n{process.stderr[-3000:]}")
        figures = json.loads(lines[-1][len("RESULT "):])
        for m, k, n in args.shapes:
            f32, bf16 = figures[f"{m}x{k}x{n} float32"], figures[f"{m}x{k}x{n} bfloat16"]
            print(f"{backend:10s} {m}x{k} by {k}x{n}: float32 {f32:.0f}, bfloat16 {bf16:.0f} "
                  f"GFLOP/s ({bf16 / f32:.2f}x)")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--worker"]:
        measure([shape(text) for text in sys.argv[2:]])
    else:
        main()
