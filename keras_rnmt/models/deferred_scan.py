"""JAX: a decoder unroll whose large weight gradients are taken once, over all steps.

Autodiff of `jax.lax.scan` treats a weight W that the step multiplies by as a loop
constant: every step of the backward loop adds its x_tᵀ δ_t into a W-sized accumulator
(for the decoder LSTM's 768×2,048 and 512×2,048 kernels, 10 MB read and written per
step). Here those products are "probed" instead,

    z_t = x_t W + p_t,   p_t = 0,

and the backward loop runs with W held constant, so it yields δ_t = ∂L/∂p_t of every step
as one stacked (steps, batch, out) tensor; the weight gradient is then a single matmul
over all steps × batch rows:

    ∂L/∂W = Σ_t x_tᵀ δ_t = Xᵀ Δ.

Everything else the step reads (attention weights, biases, the encoder memory, the
initial state, the per-step inputs) is differentiated by plain autodiff as before.
"""

import keras
from keras import ops, tree

from keras_rnmt.matmul_precision import matmul as precision_matmul
from keras_rnmt.matmul_precision import weight_gradient


def deferred_scan(step, variables, kernels, context, init, xs):
    """`jax.lax.scan` of `step` with the gradients of `kernels` taken after the loop.

    Args:
        step: `step(context, carry, x, matmul) -> (carry, y)`. Every product with a
            variable of `kernels` must go through `matmul(inputs, kernel_variable)`, once
            per step; the step reads Keras variables only from `variables`.
        variables: every Keras variable `step` reads (e.g. `cell.variables`).
        kernels: the variables among them to defer, each a (in, out) matrix.
        context: per-sequence tensors the step reads (a pytree), differentiated as usual.
        init: the initial carry (a pytree).
        xs: per-step inputs, a pytree of (steps, batch, ...) tensors.

    Returns:
        `(final_carry, ys)` as `jax.lax.scan` returns them.
    """
    import jax

    variables = list(variables)
    positions = [_index(variables, kernel) for kernel in kernels]
    values = tuple(variable.value for variable in variables)

    def run(values, context, init, xs, probes):
        mapping = list(zip(variables, values))

        def body(carry, x_and_probes):
            x, step_probes = x_and_probes
            matmul = _Matmul(variables, positions, step_probes)
            carry, y = step(context, carry, x, matmul)
            return carry, (y, matmul.recorded())

        with keras.StatelessScope(mapping):
            carry, (ys, inputs) = jax.lax.scan(body, init, (xs, probes))
        return (carry, ys), inputs

    @jax.custom_vjp
    def unroll(values, context, init, xs):
        return run(values, context, init, xs, None)[0]

    def forward(values, context, init, xs):
        steps, batch = ops.shape(tree.flatten(xs)[0])[0], ops.shape(tree.flatten(init)[0])[0]
        probes = tuple(
            ops.zeros((steps, batch, values[p].shape[-1]), "float32") for p in positions
        )
        kernel_values = tuple(values[p] for p in positions)
        others = tuple(v for i, v in enumerate(values) if i not in positions)

        def differentiable(others, context, init, xs, probes):
            merged = _merge(len(values), positions, kernel_values, others)
            return run(merged, context, init, xs, probes)

        outputs, pullback, inputs = jax.vjp(
            differentiable, others, context, init, xs, probes, has_aux=True
        )
        return outputs, (pullback, inputs, kernel_values)

    def backward(residuals, cotangents):
        pullback, inputs, kernel_values = residuals
        d_others, d_context, d_init, d_xs, d_probes = pullback(cotangents)
        d_kernels = [
            ops.cast(weight_gradient(x, delta), kernel.dtype)
            for x, delta, kernel in zip(inputs, d_probes, kernel_values)
        ]
        d_values = _merge(len(values), positions, d_kernels, d_others)
        return d_values, d_context, d_init, d_xs

    unroll.defvjp(forward, backward)
    return unroll(values, context, init, xs)


class _Matmul:
    """The `matmul` a probed step gets: x @ W (+ p_t for a deferred W), recording x."""

    def __init__(self, variables, positions, probes):
        self.kernels = {id(variables[p]): n for n, p in enumerate(positions)}
        self.probes = probes
        self.inputs = [None] * len(positions)

    def __call__(self, x, kernel):
        out = precision_matmul(x, kernel)
        n = self.kernels.get(id(kernel))
        if n is None:
            return out
        if self.inputs[n] is not None:
            raise ValueError(f"deferred kernel {kernel.path} multiplied twice in one step")
        self.inputs[n] = x
        if self.probes is None:
            return out
        return out + ops.cast(self.probes[n], out.dtype)

    def recorded(self):
        missing = [n for n, x in enumerate(self.inputs) if x is None]
        if missing:
            raise ValueError(f"deferred kernels {missing} were not multiplied in the step")
        return tuple(self.inputs)


def _index(variables, kernel):
    for i, variable in enumerate(variables):
        if variable is kernel:
            return i
    raise ValueError(f"deferred kernel {kernel.path} is not among the step's variables")


def _merge(count, positions, kernels, others):
    """The full tuple of `count` variable values from the deferred ones and the rest."""
    kernels, others = dict(zip(positions, kernels)), iter(others)
    return tuple(kernels[i] if i in kernels else next(others) for i in range(count))

