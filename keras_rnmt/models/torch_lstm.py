"""The encoder's masked (bi)LSTM layer in one fused PyTorch call, under the torch backend.

Keras 3's torch backend runs a masked LSTM through its generic RNN loop: a Python loop over
time steps, a few Keras ops each, in both directions, forward and backward; only unmasked
inputs reach its fused paths. The encoder's inputs are always masked (padding), so under
PyTorch every training step paid that loop. Here the same layer runs as `torch._VF.lstm`
over a packed sequence (`torch.nn.utils.rnn.pack_padded_sequence`): PyTorch's own C++ loop
on a CPU, cuDNN on a GPU, with the Keras layer's own weights, so gradients reach them.

It computes what the Keras layer computes (Yang et al. Eq. 1-2, h_i = [→h_i; ←h_i]) for
right-padded masks (as the data pipeline makes them): the forward direction stops at each sentence's last real word, the
backward one starts there, padded positions output zeros (a lone forward LSTM, unless told
to zero them, repeats its last real output there, as Keras' does), and the final states are
each direction's last real state. `fused_lstm` returns None where it does not apply (another
backend, a mask with a hole or an empty row, non-default activations, dropout inside the
LSTM, a `torch.compile` trace), and the caller runs the Keras layer instead.
"""

import keras
from keras import ops


def fused_lstm(rnn, x, mask, training=False):
    """`rnn(x, mask=mask)` for a Keras LSTM or Bidirectional(LSTM) layer, fused; or None.

    Args:
        rnn: a built `keras.layers.LSTM` (`return_sequences=True, return_state=True`) or a
            `keras.layers.Bidirectional` of one (merge mode "concat").
        x: float tensor (batch, length, features).
        mask: bool tensor (batch, length), True on real steps, right-padded.
        training: bool; only dropout inside the LSTM would use it, and none is allowed.

    Returns:
        The Keras layer's outputs: `[sequences, h, c]` (one direction) or
        `[sequences, h_fwd, c_fwd, h_bwd, c_bwd]`, sequences (batch, length, units ×
        directions) with padded steps filled as the Keras layer fills them; or None where the
        fused call does not apply.
    """
    if keras.backend.backend() != "torch" or mask is None:
        return None
    bidirectional = isinstance(rnn, keras.layers.Bidirectional)
    layers = [rnn.forward_layer, rnn.backward_layer] if bidirectional else [rnn]
    if bidirectional and rnn.merge_mode != "concat":
        return None
    if not all(_plain_lstm(layer, go_backwards=i == 1) for i, layer in enumerate(layers)):
        return None
    if bidirectional and not all(layer.zero_output_for_mask for layer in layers):
        return None
    import torch
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    if torch.compiler.is_compiling():  # packing syncs with the host: leave it to Keras there
        return None
    mask = ops.convert_to_tensor(mask).bool()
    length = mask.shape[1]
    if length == 0:
        return None
    lengths = mask.sum(dim=1).cpu()  # packing needs them on the host anyway
    right_padded = torch.arange(length)[None, :] < lengths[:, None]
    if bool((lengths == 0).any()) or not torch.equal(right_padded.to(mask.device), mask):
        return None
    dtype = keras.backend.standardize_dtype(rnn.compute_dtype)
    x = ops.cast(x, dtype)
    params = []
    for layer in layers:
        cell = layer.cell
        params += [ops.transpose(ops.cast(cell.kernel, dtype)),
                   ops.transpose(ops.cast(cell.recurrent_kernel, dtype))]
        if cell.use_bias:
            bias = ops.cast(cell.bias, dtype)
            params += [bias, torch.zeros_like(bias)]
    batch, units = x.shape[0], layers[0].cell.units
    zeros = torch.zeros((len(layers), batch, units), dtype=x.dtype, device=x.device)
    packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
    data, h, c = torch._VF.lstm(packed.data, packed.batch_sizes, (zeros, zeros), params,
                                layers[0].cell.use_bias, 1, 0.0, training, bidirectional)
    sequences, _ = pad_packed_sequence(packed._replace(data=data), batch_first=True,
                                       total_length=length)
    # torch's final states come in the packing's order of rows; back to the batch's.
    index = packed.unsorted_indices
    states = []
    for direction in range(len(layers)):
        states += [h[direction][index], c[direction][index]]
    if not layers[0].zero_output_for_mask:
        # A lone LSTM (Keras' default) carries its last real output over the padded steps.
        sequences = ops.where(mask[:, :, None], sequences, states[0][:, None, :])
    return [sequences, *states]


def _plain_lstm(layer, go_backwards):
    """Whether `layer` is an LSTM that `torch._VF.lstm` computes exactly."""
    if not isinstance(layer, keras.layers.LSTM):
        return False
    cell = layer.cell
    return (cell.activation is keras.activations.tanh
            and cell.recurrent_activation is keras.activations.sigmoid
            and not cell.dropout and not cell.recurrent_dropout
            and layer.return_sequences and layer.return_state
            and layer.go_backwards == go_backwards and not layer.unroll and not layer.stateful)
