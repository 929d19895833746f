"""LSTM recurrences with the input projection outside the loop, both directions in one loop.

Keras' generic RNN loop (the path every backend takes on CPU, and whenever a mask is given)
multiplies each step's input by the kernel inside the recurrence: per step a (batch, input)
by (input, 4·units) matmul, small and one after another. Here the input projection of every
position is one (batch·length, input) by (input, 4·units) matmul before the loop, and a
bidirectional layer runs its two directions in the same loop as a batched matmul over a
direction axis, so the loop does half the steps, each one (2, batch, units) x (2, units,
4·units) matmul plus the gates.

The weights are those of `keras.layers.LSTMCell` (`kernel`, `recurrent_kernel`, `bias`; gate
order i, f, c, o), so models keep the variables and saved files of Keras' `LSTM` and
`Bidirectional` layers. The math is Keras' `LSTMCell` with its defaults (sigmoid gates, tanh
cell activation):
    z_t = x_t W + h_{t-1} U + b,   [i, f, g, o] = split(z_t)
    c_t = σ(f) ⊙ c_{t-1} + σ(i) ⊙ tanh(g),   h_t = σ(o) ⊙ tanh(c_t)
"""

from keras import ops

from keras_rnmt.loop import scan


def lstm_update(z, c):
    """The LSTM cell update from its pre-activations.

    Args:
        z: (..., 4·units) pre-activations x W + h U + b, gate order i, f, c, o.
        c: (..., units) previous cell state.

    Returns:
        `(h, c)`, each (..., units).
    """
    i, f, g, o = ops.split(z, 4, axis=-1)
    c = ops.sigmoid(f) * c + ops.sigmoid(i) * ops.tanh(g)
    return ops.sigmoid(o) * ops.tanh(c), c


def project_inputs(x, cell, dtype):
    """x W + b for every position at once: (..., input_dim) -> (..., 4·units)."""
    kernel = ops.cast(cell.kernel, dtype)
    return ops.matmul(x, kernel) + ops.cast(cell.bias, dtype)


def fused_lstm(x, mask, cells):
    """Run one LSTM (`cells` of length 1) or a bidirectional pair (forward, backward).

    Padding must be at the end of each row (it is in every batch of
    `keras_rnmt.data.make_dataset`): a padded step keeps the state unchanged, so the forward
    direction's final state is that of the last real token, and the backward direction,
    which reads the row from its end, starts on the first real token from zeros.

    Args:
        x: (batch, length, input_dim) inputs.
        mask: bool (batch, length), True on real tokens.
        cells: one `LSTMCell`, or two (forward, backward).

    Returns:
        `(outputs, finals)`: outputs (batch, length, units · len(cells)), zero on padding,
        the directions concatenated forward first; finals a list per direction of
        `(h, c)` final states, each (batch, units).
    """
    dtype = x.dtype
    directions = len(cells)
    units = cells[0].units
    batch = ops.shape(x)[0]
    projected, masks = [], []
    for d, cell in enumerate(cells):
        xp = project_inputs(x, cell, dtype)  # batch x length x 4·units
        m = mask
        if d == 1:
            xp, m = ops.flip(xp, axis=1), ops.flip(mask, axis=1)
        projected.append(xp)
        masks.append(m)
    # length x directions x batch x 4·units, and length x directions x batch x 1
    xs = ops.transpose(ops.stack(projected, axis=0), (2, 0, 1, 3))
    ms = ops.transpose(ops.stack(masks, axis=0), (2, 0, 1))[..., None]
    recurrent = ops.stack([ops.cast(cell.recurrent_kernel, dtype) for cell in cells], axis=0)
    zeros = ops.zeros((directions, batch, units), dtype=dtype)

    def body(carry, inputs):
        h, c = carry  # directions x batch x units
        xp_t, m_t = inputs
        new_h, new_c = lstm_update(xp_t + ops.matmul(h, recurrent), c)
        h = ops.where(m_t, new_h, h)
        c = ops.where(m_t, new_c, c)
        return (h, c), ops.where(m_t, new_h, ops.zeros_like(new_h))

    (h, c), ys = scan(body, (zeros, zeros), (xs, ms))
    outputs = []
    for d in range(directions):
        y = ops.transpose(ys[:, d], (1, 0, 2))  # batch x length x units
        outputs.append(ops.flip(y, axis=1) if d == 1 else y)
    finals = [(h[d], c[d]) for d in range(directions)]
    outputs = outputs[0] if directions == 1 else ops.concatenate(outputs, axis=-1)
    return outputs, finals
