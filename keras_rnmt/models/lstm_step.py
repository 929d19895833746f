"""The step of `keras.layers.LSTMCell`, with its two weight matmuls passed in."""

from keras import ops

from keras_rnmt.matmul_precision import matmul as precision_matmul


def plain_matmul(x, kernel):
    """`x @ kernel` for a Keras variable `kernel`, at the current `matmul_precision`: the
    matmul every path but JAX training uses."""
    return precision_matmul(x, kernel)


def lstm_step(cell, x, states, matmul=plain_matmul):
    """One step of a built `keras.layers.LSTMCell` (Keras's gate order i, f, c, o):

        z = x W + h_{t-1} U + b,        i, f, g, o = split(z, 4)
        c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),      h_t = σ(o) ⊙ tanh(c_t)

    with σ and tanh the cell's `recurrent_activation` and `activation`. The same math as
    `LSTMCell.call` (its fused `implementation=2`), written out so that `x W` and `h U` go
    through `matmul(inputs, kernel_variable)`: the JAX training unroll passes a `matmul`
    that defers their weight gradients (`keras_rnmt.models.deferred_scan`).

    Args:
        cell: a built `keras.layers.LSTMCell` without dropout.
        x: (batch, input_dim) inputs.
        states: `(h_{t-1}, c_{t-1})`, each (batch, units).
        matmul: `matmul(inputs, kernel_variable) -> inputs @ kernel`.

    Returns:
        `(h_t, (h_t, c_t))`.
    """
    if cell.dropout or cell.recurrent_dropout:
        raise ValueError("lstm_step does not apply LSTMCell dropout; build the cell without it")
    h, c = states
    z = ops.add(matmul(x, cell.kernel), matmul(h, cell.recurrent_kernel))
    if cell.use_bias:
        z = ops.add(z, cell.bias)
    i, f, g, o = ops.split(z, 4, axis=-1)
    gate, squash = cell.recurrent_activation, cell.activation
    c = ops.add(ops.multiply(gate(f), c), ops.multiply(gate(i), squash(g)))
    h = ops.multiply(gate(o), squash(c))
    return h, (h, c)
