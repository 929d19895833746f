"""bfloat16 matmul operands with float32 accumulation, for float32 models (JAX, PyTorch).

Under `matmul_precision("bfloat16")` the model's large products take their operands rounded
to bfloat16 and accumulate and return float32:

    y = bf16(x) · bf16(W)        (float32 sums and result; everything else stays float32)

the same numerics as JAX's default matmul precision on TPUs and, with TF32 instead of
bfloat16, on recent GPUs. Variables, activations, the softmax and the optimizer stay
float32, unlike Keras' `mixed_bfloat16` policy, which computes every layer in bfloat16.

Why: on a CPU with AMX, XLA's bfloat16 × bfloat16 → float32 dots ran 3-6× as fast as
float32 ones (SB's vocabulary projection at 1,683 against 273 GFLOP/s), while a dot with a
bfloat16 *result* (what `mixed_bfloat16` asks for) ran at 0.6-0.8× float32
(`benchmarks/bf16_products.py`; `benchmarks/RESULTS.md` §1, "bfloat16 operands with float32
sums"). The backward pass is written out (`jax.custom_vjp`) so that its two products take
bfloat16 operands too:

    ∂L/∂x = bf16(g) · bf16(W)ᵀ,      ∂L/∂W = bf16(x)ᵀ · bf16(g)

Under PyTorch the same products run with oneDNN's float32 matmuls told to compute in
bfloat16 (``torch.backends.mkldnn.matmul.fp32_precision = "bf16"``, set around each product
forward and backward only): bfloat16 operands, float32 sums and a float32 result, the same
numbers as the rounded operands' exact products up to the order of the sums (`torch_product`). On the AMX
host SB's vocabulary projection ran at 1,017-1,100 GFLOP/s that way against 268-301 in
float32 (RESULTS.md §1, "PyTorch: bfloat16 operands with float32 sums").

What goes through it: the decoder's LSTM and W_c products (`lstm_step`, `deferred_scan`,
`torch_deferred_scan`), and every `MatrixDense` (the attention projections, the vocabulary
projection). The encoder's Keras LSTM layers and the bridge keep float32 products.

    >>> matmul_precision()
    'float32'
"""

import contextlib
import functools
import warnings

import keras
from keras import ops

from keras_rnmt.precision import emulated_matmul_precision_warning, native_on_cpu

MATMUL_PRECISIONS = ("float32", "bfloat16")
_current = ["float32"]


def check_matmul_precision(value):
    """Raise a ValueError unless `value` is a valid precision under the Keras backend."""
    if value not in MATMUL_PRECISIONS:
        raise ValueError(f"Unknown matmul_precision {value!r}. Valid choices: "
                         f"{', '.join(map(repr, MATMUL_PRECISIONS))}")
    backend = keras.backend.backend()
    if value == "bfloat16" and backend not in ("jax", "torch"):
        raise ValueError(
            f"matmul_precision='bfloat16' is implemented under JAX and PyTorch only "
            f"(KERAS_BACKEND=jax or torch); the backend is {backend!r}. Use "
            "matmul_precision='float32', or dtype_policy='mixed_bfloat16' for bfloat16 "
            "under TensorFlow.")


def matmul_precision():
    """The current matmul precision: "float32" or "bfloat16"."""
    return _current[0]


def set_matmul_precision(value):
    """Set the matmul precision of every model built or traced from now on.

    Warns (RuntimeWarning) when "bfloat16" is set on a CPU without native bfloat16
    matmuls, where the products are emulated (`keras_rnmt.precision`).

    Args:
        value: "float32" (plain float32 products) or "bfloat16" (JAX and PyTorch:
            bfloat16 operands, float32 sums and result).
    """
    _set(value, stacklevel=3)


def _set(value, stacklevel):
    """Check and set `value`; a warning names the frame `stacklevel` up from `warn`."""
    check_matmul_precision(value)
    if value != _current[0]:
        message = emulated_matmul_precision_warning(value)
        if message:
            warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)
    _current[0] = value


@contextlib.contextmanager
def matmul_precision_scope(value):
    """`with matmul_precision_scope("bfloat16"):` sets the precision inside the block only."""
    previous = matmul_precision()
    _set(value, stacklevel=4)  # _set, this generator, contextlib's __enter__, the `with`
    try:
        yield
    finally:
        _current[0] = previous


def _reduced(*tensors):
    """True when the current precision rounds these float32 operands to bfloat16."""
    return _current[0] == "bfloat16" and all(
        keras.backend.standardize_dtype(t.dtype) == "float32" for t in tensors)


def matmul(x, kernel):
    """`x @ kernel` at the current precision.

    Args:
        x: (..., k) tensor.
        kernel: (k, n) tensor or Keras variable.

    Returns:
        (..., n): float32 from bfloat16 operands under "bfloat16" when both are float32 and
        n > 1; otherwise `ops.matmul(x, kernel)`. A matrix-vector product (n = 1, the
        additive score's v_a) stays float32: it gains nothing, and its bfloat16 weight
        gradient cost a transposed copy of x at every decoder step (11 ms a training step).
    """
    if _current[0] == "float32":
        return ops.matmul(x, kernel)
    value = kernel.value if isinstance(kernel, keras.Variable) else kernel  # autocast
    if not _reduced(x, value) or len(value.shape) != 2 or value.shape[1] == 1:
        return ops.matmul(x, kernel)
    if keras.backend.backend() == "torch":
        return _torch_bf16_matmul().apply(ops.convert_to_tensor(x), value)
    return _bf16_matmul()(x, value)


def torch_product(a, b, reduced=True):
    """PyTorch: `a @ b` for float32 tensors, from bfloat16 operands with float32 sums and
    result when `reduced` (else the plain product).

    oneDNN computes a float32 product in bfloat16 under ``torch.backends.mkldnn.matmul.
    fp32_precision = "bf16"``, set here around the product only; PyTorch sends a product to
    oneDNN only when m·k·n > 16³, so smaller ones round their operands here instead (they
    cost nothing either way). Rounding every operand by hand would make the rule exact but
    cost SB's step 60 ms of its 250, for the same loss to the last bit; the price is that
    a few larger products oneDNN leaves to its float32 gemm (seen for inner dimensions of
    16 or less, on PyTorch 2.13) stay float32. On a CPU without native bfloat16 (none of
    the flags `precision.NATIVE_FLAGS["mixed_bfloat16"]`) oneDNN ignores the setting and
    multiplies in float32 (PyTorch 2.13, an AVX2-only AMD host), so every CPU product is
    rounded here: the same numbers on every CPU."""
    if not reduced:
        return a @ b
    if a.numel() * b.shape[-1] <= _ONEDNN_MIN_SIZE or (
            a.device.type == "cpu" and not _onednn_has_bf16()):
        return a.bfloat16().float() @ b.bfloat16().float()
    with _torch_fp32_precision("bf16"):
        return a @ b


@functools.cache
def _onednn_has_bf16():
    """Whether this CPU multiplies bfloat16 natively, so that oneDNN honours its bf16
    setting (assumed where the flags cannot be read)."""
    return native_on_cpu("mixed_bfloat16")


# PyTorch's smallest product (m·k·n) for oneDNN's gemm (`checksize` in ATen's
# native/mkldnn/Matmul.cpp); at or below it, oneDNN's bfloat16 setting is not consulted.
_ONEDNN_MIN_SIZE = 16 * 16 * 16


@contextlib.contextmanager
def _torch_fp32_precision(value):
    import torch

    settings = torch.backends.mkldnn.matmul
    previous = settings.fp32_precision
    settings.fp32_precision = value
    try:
        yield
    finally:
        settings.fp32_precision = previous


@functools.cache
def _torch_bf16_matmul():
    """The PyTorch autograd function bf16(x) · bf16(W) → float32, backward in bfloat16."""
    import torch

    class Product(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, kernel):
            ctx.save_for_backward(x, kernel)
            return torch_product(x, kernel)

        @staticmethod
        def backward(ctx, g):
            x, kernel = ctx.saved_tensors
            k, n = kernel.shape
            d_x = torch_product(g, kernel.T) if ctx.needs_input_grad[0] else None
            d_kernel = (torch_product(x.reshape(-1, k).T, g.reshape(-1, n))
                        if ctx.needs_input_grad[1] else None)
            return d_x, d_kernel

    return Product


def weight_gradient(x, delta):
    """Σ_t x_tᵀ δ_t for stacked (steps, batch, in) inputs and (steps, batch, out) deltas,
    at the current precision; (in, out) float32."""
    if not _reduced(x, delta):
        return ops.einsum("tbi,tbo->io", x, delta)
    if keras.backend.backend() == "torch":
        return torch_product(x.reshape(-1, x.shape[-1]).T, delta.reshape(-1, delta.shape[-1]))
    import jax.numpy as jnp

    return jnp.einsum("tbi,tbo->io", x.astype(jnp.bfloat16), delta.astype(jnp.bfloat16),
                      preferred_element_type=jnp.float32)


@functools.cache
def _bf16_matmul():
    """The JAX function bf16(x) · bf16(W) → float32 with the backward pass in bfloat16."""
    import jax
    import jax.numpy as jnp

    bf16, f32 = jnp.bfloat16, jnp.float32

    @jax.custom_vjp
    def product(x, kernel):
        return forward(x, kernel)[0]

    def forward(x, kernel):
        x16, kernel16 = x.astype(bf16), kernel.astype(bf16)
        return jnp.matmul(x16, kernel16, preferred_element_type=f32), (x16, kernel16)

    def backward(residuals, g):
        x16, kernel16 = residuals
        g16 = g.astype(bf16)
        k, n = kernel16.shape
        # How each product is written decides XLA's kernel (AMX, 2026-12-02, SB's vocabulary
        # projection; `benchmarks/bf16_products.py`): g · Wᵀ as `jnp.matmul(g, W.T)` ran at
        # 220 GFLOP/s, as a `dot_general` contracting both last axes at 1,154; xᵀ · g over
        # 2-D operands at 223, with a leading unit axis at 1,528.
        d_x = jax.lax.dot_general(g16, kernel16, (((g16.ndim - 1,), (1,)), ((), ())),
                                  preferred_element_type=f32)
        d_kernel = jnp.einsum("bti,bto->io", x16.reshape(1, -1, k), g16.reshape(1, -1, n),
                              preferred_element_type=f32)
        return d_x, d_kernel

    product.defvjp(forward, backward)
    return product
