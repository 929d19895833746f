"""The step-wise decoding layer: the one piece of math for a target token.

Training unrolls it (`AttentionDecoder.call`), greedy and beam search call it
(`AttentionDecoder.step`), and the SavedModel exports it. Nothing re-implements it.
"""

import keras
from keras import ops

from keras_rnmt.attention import get_attention
from keras_rnmt.direct_call import calls_directly
from keras_rnmt.models.lstm_step import lstm_step, plain_matmul


@keras.saving.register_keras_serializable(package="keras_rnmt")
class AttentionDecoderCell(keras.layers.Layer):
    """One decoder step with any attention variant, Luong or Bahdanau order.

    Luong order (`attention_order="luong"`; Yang et al. Eq. 4-9, Luong et al. 2015):
        s_j = RNN(s_{j-1}, [E y_{j-1}; f_{j-1}])          (Eq. 4)
        c_j, α_j = attention(s_j, h)                     (Eq. 5-7, or 11-13 for recurrent)
        h~_j = tanh(W_c [c_j; s_j])                       (Luong Eq. 5; Yang's Eq. 8 adds a
                                                           bias b_1, left out here)
    Bahdanau order (`attention_order="bahdanau"`, Bahdanau et al. 2015):
        c_j, α_j = attention(s_{j-1}, h)
        s_j = RNN(s_{j-1}, [E y_{j-1}; c_j; f_{j-1}])
        h~_j = tanh(W_c [c_j; s_j])
    Input feeding f_{j-1} is h~_{j-1} ("attentional", Luong §3.3), c_{j-1} ("context",
    Yang Eq. 4) or nothing ("none"). Without attention (`attention="none"`, Collins'
    encoder-decoder) the encoder's final state z enters every step and the output:
        s_j = RNN(s_{j-1}, [E y_{j-1}; z]),  h~_j = tanh(W_c [z; s_j]).

    Args:
        units: int. Units of every decoder RNN layer; also the size of h~_j.
        num_layers: int. Stacked RNN cells. Defaults to 1.
        cell: str. "lstm" or "gru". Defaults to "lstm".
        attention: str. An attention name of `keras_rnmt.attention.ATTENTION_NAMES`, or
            "none". Defaults to "bahdanau".
        attention_options: dict. Keyword arguments of the attention layer.
        attention_order: str. "luong" or "bahdanau". Defaults to "luong".
        input_feeding: str. "attentional", "context" or "none". Defaults to "attentional".

    Call arguments:
        inputs: (batch, embedding_dim) embedded previous tokens E y_{j-1}.
        state: dict with "rnn" (a tuple per layer of (batch, units) tensors), "feed"
            (batch, feed_dim) and "attention" (the attention's state tuple).
        context: dict from `prepare()`: "memory" (batch, source_len, memory_dim),
            "keys", "mask" (batch, source_len) bool and "final" (batch, final_dim).
        step: int scalar, the 0-based target position j.
        matmul: `matmul(inputs, kernel_variable)` for the LSTM's and W_c's products (see
            `deferred_kernels`). Defaults to a plain matmul.

    Returns:
        `(h~_j (batch, units), new_state, α_j (batch, source_len) float32 or None)`.
    """

    def __init__(
        self,
        units,
        num_layers=1,
        cell="lstm",
        attention="bahdanau",
        attention_options=None,
        attention_order="luong",
        input_feeding="attentional",
        **kwargs,
    ):
        super().__init__(**kwargs)
        for name, value, choices in (
            ("cell", cell, ("lstm", "gru")),
            ("attention_order", attention_order, ("luong", "bahdanau")),
            ("input_feeding", input_feeding, ("attentional", "context", "none")),
        ):
            if value not in choices:
                raise ValueError(
                    f"Unknown {name} {value!r}. Valid choices: {', '.join(map(repr, choices))}"
                )
        self.units = units
        self.num_layers = num_layers
        self.cell = cell
        self.attention = attention
        self.attention_options = dict(attention_options or {})
        self.attention_order = attention_order
        self.input_feeding = input_feeding if attention != "none" else "none"
        cell_class = keras.layers.LSTMCell if cell == "lstm" else keras.layers.GRUCell
        self.cells = [
            cell_class(units, dtype=self.dtype_policy, name=f"{cell}_cell_{i}")
            for i in range(num_layers)
        ]
        self.attention_layer = None
        if attention != "none":
            self.attention_layer = get_attention(
                attention, dtype=self.dtype_policy, name="attention", **self.attention_options
            )
        self.combine = keras.layers.Dense(
            units, activation="tanh", use_bias=False, dtype=self.dtype_policy, name="combine"
        )

    def feed_dim(self, memory_dim):
        return {"attentional": self.units, "context": memory_dim, "none": 0}[self.input_feeding]

    def build(self, inputs_shape, memory_shape, final_shape):
        batch, embedding_dim = inputs_shape
        memory_dim = memory_shape[-1]
        extra = final_shape[-1] if self.attention_layer is None else memory_dim
        rnn_input = embedding_dim + self.feed_dim(memory_dim)
        if self.attention_layer is None or self.attention_order == "bahdanau":
            rnn_input += extra
        for i, cell in enumerate(self.cells):
            cell.build((batch, rnn_input if i == 0 else self.units))
        if self.attention_layer is not None:
            self.attention_layer.build((batch, self.units), memory_shape)
        self.combine.build((batch, extra + self.units))
        self.built = True

    def prepare(self, memory, mask, final):
        """Per-sentence constants: memory-side attention projections are computed once."""
        keys = () if self.attention_layer is None else self.attention_layer.prepare(memory, mask)
        return {"memory": memory, "keys": keys, "mask": mask, "final": final}

    def initial_state(self, rnn_states, context):
        """The state before the first target step.

        Args:
            rnn_states: a tuple per layer of the initial RNN state tensors (batch, units).
            context: the dict from `prepare()`.
        """
        memory = context["memory"]
        batch = ops.shape(memory)[0]
        feed = ops.zeros((batch, self.feed_dim(memory.shape[-1])), dtype=self.compute_dtype)
        attention_state = ()
        if self.attention_layer is not None:
            attention_state = self.attention_layer.initial_state(memory, context["mask"])
        return {"rnn": tuple(tuple(s) for s in rnn_states), "feed": feed,
                "attention": tuple(attention_state)}

    def deferred_kernels(self):
        """The kernels `call` multiplies through its `matmul` argument: the LSTM layers'
        W and U, and W_c. The JAX training unroll takes their gradients once over all steps."""
        kernels = [k for cell in self.cells if isinstance(cell, keras.layers.LSTMCell)
                   for k in (cell.kernel, cell.recurrent_kernel)]
        return kernels + [self.combine.kernel]

    def _rnn(self, x, rnn_state, training, matmul):
        new_states = []
        for cell, states in zip(self.cells, rnn_state):
            if isinstance(cell, keras.layers.LSTMCell):
                x, states = lstm_step(cell, x, states, matmul)
            else:
                x, states = cell(x, list(states), training=training)
            new_states.append(tuple(states))
        return x, tuple(new_states)

    def _attend(self, query, state, context, step, training):
        layer = self.attention_layer
        # Eager PyTorch skips Keras' call wrapper where it would change nothing
        # (keras_rnmt/direct_call.py); the layer's `call` is the same either way.
        call = layer.call if calls_directly(layer, query) else layer
        return call(
            query, context["memory"], context["keys"], mask=context["mask"],
            state=state["attention"], step=step, training=training,
        )

    def call(self, inputs, state, context, step, training=False, matmul=plain_matmul):
        pieces = [inputs] + ([state["feed"]] if self.input_feeding != "none" else [])
        weights, attention_state = None, state["attention"]
        if self.attention_layer is None:
            extra = context["final"]
            s, rnn_state = self._rnn(
                ops.concatenate(pieces + [extra], -1), state["rnn"], training, matmul
            )
        elif self.attention_order == "bahdanau":
            query = state["rnn"][-1][0]
            extra, weights, attention_state = self._attend(query, state, context, step, training)
            s, rnn_state = self._rnn(
                ops.concatenate(pieces + [extra], -1), state["rnn"], training, matmul
            )
        else:
            s, rnn_state = self._rnn(ops.concatenate(pieces, -1), state["rnn"], training, matmul)
            extra, weights, attention_state = self._attend(s, state, context, step, training)
        # h~_j = tanh(W_c [c_j; s_j]): `combine` holds W_c (no bias) and its tanh; the
        # product goes through `matmul` like the LSTM's.
        combined = matmul(ops.concatenate([extra, s], axis=-1), self.combine.kernel)
        output = self.combine.activation(combined)
        feed = {"attentional": output, "context": extra}.get(self.input_feeding, state["feed"])
        new_state = {"rnn": rnn_state, "feed": feed, "attention": tuple(attention_state)}
        return output, new_state, weights

    def get_config(self):
        config = super().get_config()
        config.update(
            units=self.units,
            num_layers=self.num_layers,
            cell=self.cell,
            attention=self.attention,
            attention_options=self.attention_options,
            attention_order=self.attention_order,
            input_feeding=self.input_feeding,
        )
        return config
