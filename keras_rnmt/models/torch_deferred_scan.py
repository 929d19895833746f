"""PyTorch: a decoder unroll whose large weight gradients are taken once, over all steps.

Eager autograd differentiates every step's product z_t = x_t W on its own: the backward
pass of each step computes x_tᵀ δ_t, a (in, out) matrix from a 64-row product, and adds it
into W's gradient. For SB's decoder (the LSTM's 768×2,048 and 512×2,048 kernels, W_c's
1,024×512) that is three thin products and three W-sized additions a step, about 40 ms of
a 340 ms training step on the Intel AMX host (benchmarks/RESULTS.md §1, "PyTorch: weight
gradients after the decoder loop"). As `deferred_scan` does for JAX, the unroll here
records each step's x_t and δ_t = ∂L/∂z_t and takes the gradient once, after the loop:

    ∂L/∂W = Σ_t x_tᵀ δ_t = Xᵀ Δ,    X = [x_1; …; x_T],  Δ = [δ_1; …; δ_T]   (T·batch rows).

Two autograd functions do it (`_functions`). `DeferredProduct` is x_t W whose backward returns only
∂L/∂x_t = δ_t Wᵀ and keeps δ_t. `Gradients` takes the kernels in and gives out a zero
"token" that every `DeferredProduct` of the unroll also takes in: autograd runs a node's
backward only once every consumer of its output has run, so `Gradients.backward` runs
after the last step's product has kept its δ_t, and returns Xᵀ Δ for each kernel.
"""

import functools

import keras
from keras import tree

from keras_rnmt.matmul_precision import matmul_precision, torch_product


def torch_deferred_scan(step, kernels, context, init, xs):
    """A Python loop of `step` with the gradients of `kernels` taken after it (eager PyTorch).

    Args:
        step: `step(context, carry, x, matmul) -> (carry, y)`. Every product with one of
            `kernels` must go through `matmul(inputs, kernel_variable)`, once per step.
        kernels: float32 Keras variables, each a (in, out) matrix.
        context: per-sequence tensors the step reads, differentiated as usual.
        init: the initial carry (a nested structure of tensors).
        xs: per-step inputs, a nested structure of (steps, batch, ...) tensors.

    Returns:
        `(final_carry, ys)`, every leaf of `ys` stacked to (steps, ...), as `loop.scan`.
    """
    import torch

    records = _Records(kernels)
    token = _functions()[1].apply(records, *[kernel.value for kernel in kernels])
    carry, ys = init, []
    for t, x in enumerate(zip(*[torch.unbind(a) for a in tree.flatten(xs)])):
        matmul = _StepMatmul(records, token, t)
        carry, y = step(context, carry, tree.pack_sequence_as(xs, list(x)), matmul)
        matmul.check()
        ys.append(y)
    if not ys:
        raise ValueError("scan over zero steps")
    return carry, tree.map_structure(lambda *leaves: torch.stack(leaves), *ys)


def defers_under_torch(kernels, *tensors):
    """Whether `torch_deferred_scan` applies: PyTorch, gradients on, float32 kernels and
    float32 inputs (a mixed policy keeps autograd's own per-step gradients)."""
    if keras.backend.backend() != "torch":
        return False
    import torch

    return (torch.is_grad_enabled()
            and all(k.value.dtype == torch.float32 and k.value.requires_grad for k in kernels)
            and all(t.dtype == torch.float32 for t in tensors))


class _Records:
    """Each kernel's per-step inputs x_t (forward) and output gradients δ_t (backward)."""

    def __init__(self, kernels):
        self.index = {id(kernel): n for n, kernel in enumerate(kernels)}
        self.paths = [kernel.path for kernel in kernels]
        self.inputs = [{} for _ in kernels]
        self.deltas = [{} for _ in kernels]
        # matmul_precision "bfloat16": the three products take bfloat16 operands.
        self.reduced = matmul_precision() == "bfloat16"


class _StepMatmul:
    """The `matmul` one step gets: a deferred product for the kernels, a plain one else."""

    def __init__(self, records, token, t):
        self.records, self.token, self.t = records, token, t
        self.used = set()

    def __call__(self, x, kernel):
        from keras_rnmt.models.lstm_step import plain_matmul

        n = self.records.index.get(id(kernel))
        if n is None:
            return plain_matmul(x, kernel)
        if n in self.used:
            raise ValueError(f"deferred kernel {kernel.path} multiplied twice in one step")
        self.used.add(n)
        x = keras.ops.convert_to_tensor(x)
        self.records.inputs[n][self.t] = x.detach()
        product = _functions()[0]
        return product.apply(x, kernel.value, self.token, self.records, n, self.t)

    def check(self):
        missing = [self.records.paths[n] for n in range(len(self.records.paths))
                   if n not in self.used]
        if missing:
            raise ValueError(f"deferred kernels {missing} were not multiplied in the step")


@functools.cache
def _functions():
    """`(DeferredProduct, Gradients)`, the two autograd functions (module docstring), made
    on first use so that importing this module needs no torch."""
    import torch

    class DeferredProduct(torch.autograd.Function):
        """x_t W; its backward keeps δ_t and returns ∂L/∂x_t = δ_t Wᵀ only."""

        @staticmethod
        def forward(ctx, x, kernel, token, records, n, t):
            ctx.kernel, ctx.records, ctx.n, ctx.t = kernel, records, n, t
            return torch_product(x, kernel, records.reduced)

        @staticmethod
        def backward(ctx, delta):
            ctx.records.deltas[ctx.n][ctx.t] = delta
            grad_x = None
            if ctx.needs_input_grad[0]:
                grad_x = torch_product(delta, ctx.kernel.detach().T, ctx.records.reduced)
            return grad_x, None, delta.new_zeros(()), None, None, None

    class Gradients(torch.autograd.Function):
        """A zero token from the kernels; its backward, after every step's, returns Xᵀ Δ."""

        @staticmethod
        def forward(ctx, records, *kernels):
            ctx.records = records
            return kernels[0].new_zeros(())

        @staticmethod
        def backward(ctx, _):
            grads = []
            for inputs, deltas in zip(ctx.records.inputs, ctx.records.deltas):
                steps = sorted(deltas)  # a step whose product reached no loss has no δ_t
                if not steps:
                    grads.append(None)
                    continue
                x = torch.cat([inputs[t] for t in steps])  # (steps·batch, in)
                delta = torch.cat([deltas[t] for t in steps])
                grads.append(torch_product(x.T, delta, ctx.records.reduced))  # (in, out)
                deltas.clear()
            return (None, *grads)

    return DeferredProduct, Gradients
