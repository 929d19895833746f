"""JAX: speed of the products `matmul_precision="bfloat16"` computes, as written and as not.

    KERAS_BACKEND=jax python benchmarks/bf16_products.py          # about a minute
    KERAS_BACKEND=jax python benchmarks/bf16_products.py --shapes 320x512x7936  # other shapes

`keras_rnmt.matmul_precision` multiplies bfloat16 operands into float32 sums. Which XLA CPU
kernel runs (with AMX: 1,000+ GFLOP/s, or a slow path below float32's) depends on how each
product is written. For SB's vocabulary projection (a 960-row batch: 960×512 by 512×7,936)
and the decoder LSTM's step (64×1,280 by 1,280×2,048), this prints GFLOP/s of:

- float32 (the reference), and bfloat16 operands with a bfloat16 result (what Keras'
  `mixed_bfloat16` asks for);
- the forward product x·W with float32 sums;
- the input gradient g·Wᵀ as `jnp.matmul(g, W.T)` and as a `dot_general` contracting the
  last axes of both (what `_bf16_matmul` writes);
- the weight gradient xᵀ·g over 2-D operands and with a leading unit axis (what
  `_bf16_matmul` writes).

Best of 3 × 20 compiled calls each. A diagnosis of §1 of RESULTS.md, not a throughput figure.
"""

import argparse
import json
import os
import time

from matmul_precision import shape

SHAPES = ((960, 512, 7936), (64, 1280, 2048))  # SB's vocabulary projection, LSTM step


def gflops(fn, args, flops, repeats=20):
    """Best GFLOP/s of `repeats` calls of the compiled `fn(*args)`, over 3 rounds."""
    import jax

    compiled = jax.jit(fn)
    jax.block_until_ready(compiled(*args))
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(repeats):
            result = compiled(*args)
        jax.block_until_ready(result)
        best = min(best, (time.perf_counter() - start) / repeats)
    return round(flops / best / 1e9, 1)


def products(m, k, n):
    """{name: (function, operand shapes, operand dtype)} for an (m, k) by (k, n) product."""
    import jax
    import jax.numpy as jnp

    f32 = jnp.float32

    def nt(g, w):
        return jax.lax.dot_general(g, w, (((1,), (1,)), ((), ())), preferred_element_type=f32)

    return {
        "float32 x·W": (lambda x, w: x @ w, [(m, k), (k, n)], "float32"),
        "bfloat16 x·W, bfloat16 result": (lambda x, w: x @ w, [(m, k), (k, n)], "bfloat16"),
        "x·W, float32 sums": (lambda x, w: jnp.matmul(x, w, preferred_element_type=f32),
                              [(m, k), (k, n)], "bfloat16"),
        "g·Wᵀ as jnp.matmul(g, W.T)": (
            lambda g, w: jnp.matmul(g, w.T, preferred_element_type=f32),
            [(m, n), (k, n)], "bfloat16"),
        "g·Wᵀ as dot_general (written)": (nt, [(m, n), (k, n)], "bfloat16"),
        "xᵀ·g, 2-D": (lambda x, g: jnp.matmul(x.T, g, preferred_element_type=f32),
                      [(m, k), (m, n)], "bfloat16"),
        "xᵀ·g, leading unit axis (written)": (
            lambda x, g: jnp.einsum("bti,bto->io", x[None], g[None], preferred_element_type=f32),
            [(m, k), (m, n)], "bfloat16"),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shapes", nargs="*", type=shape, default=list(SHAPES),
                        metavar="MxKxN", help="products to time (default: SB's two)")
    parser.add_argument("--json", default="", help="also write the figures to this file")
    args = parser.parse_args(argv)
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import jax

    key = jax.random.PRNGKey(0)
    figures = {}
    for m, k, n in args.shapes:
        label = f"{m}x{k}x{n}"
        print(f"{m}x{k} by {k}x{n}")
        figures[label] = {}
        for name, (fn, shapes, dtype) in products(m, k, n).items():
            operands = [jax.random.normal(key, shape).astype(dtype) for shape in shapes]
            figures[label][name] = gflops(fn, operands, 2 * m * k * n)
            print(f"  {name:40s} {figures[label][name]:8.1f} GFLOP/s", flush=True)
    print("RESULT " + json.dumps(figures))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
