"""The attention decoder: target embeddings, bridge, the step cell unrolled, the output layer."""

import keras
from keras import ops

from keras_rnmt.attention.base import MatrixDense
from keras_rnmt.direct_call import calls_directly
from keras_rnmt.loop import scan
from keras_rnmt.models.decoder_cell import AttentionDecoderCell
from keras_rnmt.models.deferred_scan import deferred_scan
from keras_rnmt.models.dropout import Dropout
from keras_rnmt.models.lstm_step import plain_matmul
from keras_rnmt.models.torch_deferred_scan import defers_under_torch, torch_deferred_scan


@keras.saving.register_keras_serializable(package="keras_rnmt")
class AttentionDecoder(keras.layers.Layer):
    """Decode with `AttentionDecoderCell`: teacher-forced in `call`, one token in `step`.

    The teacher-forced unroll loops the cell over target positions with a backend-aware
    scan and applies the vocabulary projection once to all steps after the loop (Yang et al.
    Eq. 9), not inside it. With `teacher_forcing_ratio < 1` (scheduled sampling, Bengio et
    al. 2015) a random share of steps is fed the model's own previous argmax instead, which
    needs the projection inside the loop.

    Args:
        vocabulary_size: int. Target vocabulary size (id 0 is padding).
        embedding_dim: int. Target embedding size.
        units: int. Decoder RNN units.
        num_layers: int. Stacked decoder RNN layers. Defaults to 1.
        cell: str. "lstm" or "gru". Defaults to "lstm".
        attention: str. Attention name or "none". Defaults to "bahdanau".
        attention_options: dict. Keyword arguments of the attention layer.
        attention_order: str. "luong" or "bahdanau". Defaults to "luong".
        input_feeding: str. "attentional", "context" or "none". Defaults to "attentional".
        bridge: bool. Initialise the decoder state from the encoder's final state through a
            learned tanh layer (else zeros). Defaults to True.
        dropout: float. Dropout on target embeddings and on h~_j. Defaults to 0.
        teacher_forcing_ratio: float. Share of steps fed the reference. Defaults to 1.

    Call arguments:
        target_in: int (batch, target_len): `<s>` then the reference tokens.
        memory: (batch, source_len, memory_dim) encoder annotations.
        source_mask: bool (batch, source_len), True on real source tokens.
        final: (batch, final_dim) the encoder's final state.
        return_attention: bool. Also return the weights (batch, target_len, source_len).

    Returns:
        logits (batch, target_len, vocabulary_size) float32 (and the weights if asked).
    """

    def __init__(
        self,
        vocabulary_size,
        embedding_dim,
        units,
        num_layers=1,
        cell="lstm",
        attention="bahdanau",
        attention_options=None,
        attention_order="luong",
        input_feeding="attentional",
        bridge=True,
        dropout=0.0,
        teacher_forcing_ratio=1.0,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocabulary_size = vocabulary_size
        self.embedding_dim = embedding_dim
        self.units = units
        self.num_layers = num_layers
        self.cell_type = cell
        self.attention = attention
        self.attention_options = dict(attention_options or {})
        self.attention_order = attention_order
        self.input_feeding = input_feeding
        self.bridge = bridge
        self.dropout = dropout
        self.teacher_forcing_ratio = teacher_forcing_ratio
        self.embedding = keras.layers.Embedding(
            vocabulary_size, embedding_dim, dtype=self.dtype_policy, name="embedding"
        )
        self.cell = AttentionDecoderCell(
            units, num_layers=num_layers, cell=cell, attention=attention,
            attention_options=attention_options, attention_order=attention_order,
            input_feeding=input_feeding, dtype=self.dtype_policy, name="cell",
        )
        self.states_per_layer = 2 if cell == "lstm" else 1
        self.bridges = []
        if bridge:
            self.bridges = [
                keras.layers.Dense(units, activation="tanh", dtype=self.dtype_policy,
                                   name=f"bridge_{i}")
                for i in range(num_layers * self.states_per_layer)
            ]
        self.dropout_layer = Dropout(dropout, dtype=self.dtype_policy, name="dropout")
        self.output_layer = MatrixDense(
            vocabulary_size, dtype=self.dtype_policy, name="output_projection"
        )
        self.seed_generator = keras.random.SeedGenerator(0)

    def build(self, target_in_shape, memory_shape, source_mask_shape, final_shape):
        target_shape = target_in_shape
        batch = target_shape[0]
        self.embedding.build(target_shape)
        self.cell.build((batch, self.embedding_dim), memory_shape, final_shape)
        for layer in self.bridges:
            layer.build(final_shape)
        self.output_layer.build((batch, self.units))
        self.built = True

    # -- the pieces search and export call ------------------------------------------------
    def prepare(self, memory, mask, final):
        """Per-sentence constants for `step` (attention keys computed once)."""
        return self.cell.prepare(memory, mask, final)

    def initial_state(self, context):
        """Decoder state before `<s>`: the bridge of the encoder's final state, or zeros."""
        final = context["final"]
        batch = ops.shape(final)[0]
        if self.bridge:
            values = [layer(final) for layer in self.bridges]
        else:
            zeros = ops.zeros((batch, self.units), dtype=self.compute_dtype)
            values = [zeros] * (self.num_layers * self.states_per_layer)
        n = self.states_per_layer
        rnn_states = tuple(tuple(values[i * n:(i + 1) * n]) for i in range(self.num_layers))
        return self.cell.initial_state(rnn_states, context)

    def step(self, tokens, state, context, step, constants=None):
        """One inference step: (batch,) previous ids -> (logits (batch, V) float32, state, α_j).

        With `constants` (`search_constants()`, computed once for a search) the first LSTM
        layer's product of the embedding rows, E y_{j-1} W_x[:embedding_dim], is gathered
        from a table instead of multiplied: a (batch, embedding_dim) x (embedding_dim, 4
        units) product less per step, the same values up to float rounding.
        """
        inputs = self.embedding(tokens)
        matmul = self._table_matmul(tokens, constants) if constants else plain_matmul
        output, state, weights = self._cell(inputs)(inputs, state, context, step, matmul=matmul)
        return ops.cast(self.output_layer(output), "float32"), state, weights

    def search_constants(self):
        """What `step` can read instead of computing at every step, from the current weights.

        For an LSTM first layer with input kernel W_x ((embedding_dim + rest, 4 units), rows
        for E y_{j-1} first, Yang et al. Eq. 4): `{"input_table": E W_x[:embedding_dim]
        (V, 4 units), every target word's product; "input_kernel": W_x[embedding_dim:]
        (rest, 4 units), the rows for the rest of the input}`, in the compute dtype (the
        second is a copy, so no step slices the kernel). `{}` for a GRU decoder, whose cell
        Keras multiplies itself.
        """
        kernel = self._first_kernel()
        if kernel is None:
            return {}
        dtype, width = self.compute_dtype, self.embedding_dim
        kernel = ops.cast(kernel.value, dtype)
        embeddings = ops.cast(self.embedding.embeddings.value, dtype)
        return {"input_table": plain_matmul(embeddings, kernel[:width]),
                "input_kernel": kernel[width:]}

    def search_constant_variables(self):
        """The variables `search_constants()` is computed from (none for a GRU decoder)."""
        kernel = self._first_kernel()
        return [] if kernel is None else [self.embedding.embeddings, kernel]

    def _first_kernel(self):
        first = self.cell.cells[0]
        return first.kernel if isinstance(first, keras.layers.LSTMCell) else None

    def _table_matmul(self, tokens, constants):
        """`plain_matmul`, but the first LSTM kernel's embedding rows read from the table."""
        kernel0, width = self._first_kernel(), self.embedding_dim
        table, rest = constants["input_table"], constants["input_kernel"]

        def matmul(x, kernel):
            if kernel is not kernel0:
                return plain_matmul(x, kernel)
            # x = [E y_{j-1}; the rest]: the table holds the first block's product.
            return ops.add(ops.take(table, tokens, axis=0), plain_matmul(x[:, width:], rest))

        return matmul

    def _cell(self, inputs):
        """The step cell, or its `call` where Keras' wrapper would change nothing (eager
        PyTorch, float32: keras_rnmt/direct_call.py)."""
        return self.cell.call if calls_directly(self.cell, inputs) else self.cell

    # -- teacher-forced training ----------------------------------------------------------
    def call(self, target_in, memory, source_mask, final, training=False,
             return_attention=False):
        context = self.prepare(memory, source_mask, final)
        state = self.initial_state(context)
        embedded = self.dropout_layer(self.embedding(target_in), training=training)
        length = ops.shape(target_in)[1]
        steps = ops.arange(length, dtype="int32")
        sampling = training and self.teacher_forcing_ratio < 1.0
        if sampling:
            outputs, weights = self._unroll_sampling(embedded, target_in, state, context, steps)
        else:
            outputs, weights = self._unroll(embedded, state, context, steps, training)
        outputs = self.dropout_layer(outputs, training=training)
        logits = ops.cast(self.output_layer(outputs), "float32")
        return (logits, weights) if return_attention else logits

    def _unroll(self, embedded, state, context, steps, training):
        def body(context, state, x, matmul=plain_matmul):
            inputs, j = x
            output, state, weights = self._cell(inputs)(
                inputs, state, context, j, training=training, matmul=matmul
            )
            return state, (output, self._weights_or_zeros(weights, context))

        xs = (ops.transpose(embedded, (1, 0, 2)), steps)
        if training and keras.backend.backend() == "jax":
            # JAX takes the gradients of the LSTM's and W_c's kernels once, after the loop.
            _, (outputs, weights) = deferred_scan(
                body, self.cell.variables, self.cell.deferred_kernels(), context, state, xs
            )
        elif training and defers_under_torch(self.cell.deferred_kernels(), embedded):
            # So does eager PyTorch (keras_rnmt/models/torch_deferred_scan.py).
            _, (outputs, weights) = torch_deferred_scan(
                body, self.cell.deferred_kernels(), context, state, xs
            )
        else:
            _, (outputs, weights) = scan(lambda state, x: body(context, state, x), state, xs)
        return ops.transpose(outputs, (1, 0, 2)), ops.transpose(weights, (1, 0, 2))

    def _unroll_sampling(self, embedded, target_in, state, context, steps):
        batch, length = ops.shape(target_in)[0], ops.shape(target_in)[1]
        coins = keras.random.uniform((length, batch), seed=self.seed_generator)
        use_reference = ops.less(coins, self.teacher_forcing_ratio)
        use_reference = ops.logical_or(use_reference, ops.equal(steps, 0)[:, None])

        def body(carry, x):
            state, previous = carry
            inputs, truth, j = x
            predicted = self.embedding(previous)
            inputs = ops.where(truth[:, None], inputs, predicted)
            output, state, weights = self.cell(inputs, state, context, j, training=True)
            logits = self.output_layer(output)
            previous = ops.cast(ops.argmax(logits, axis=-1), "int32")
            return (state, previous), (output, self._weights_or_zeros(weights, context))

        xs = (ops.transpose(embedded, (1, 0, 2)), use_reference, steps)
        start = ops.zeros((batch,), dtype="int32")
        _, (outputs, weights) = scan(body, (state, start), xs)
        return ops.transpose(outputs, (1, 0, 2)), ops.transpose(weights, (1, 0, 2))

    @staticmethod
    def _weights_or_zeros(weights, context):
        if weights is None:
            return ops.zeros(ops.shape(context["mask"]), dtype="float32")
        return weights

    def compute_output_spec(self, target_in, memory, source_mask, final, training=False,
                            return_attention=False):
        batch, length = target_in.shape
        logits = keras.KerasTensor((batch, length, self.vocabulary_size), dtype="float32")
        if not return_attention:
            return logits
        return logits, keras.KerasTensor((batch, length, memory.shape[1]), dtype="float32")

    def get_config(self):
        config = super().get_config()
        config.update(
            vocabulary_size=self.vocabulary_size,
            embedding_dim=self.embedding_dim,
            units=self.units,
            num_layers=self.num_layers,
            cell=self.cell_type,
            attention=self.attention,
            attention_options=self.attention_options,
            attention_order=self.attention_order,
            input_feeding=self.input_feeding,
            bridge=self.bridge,
            dropout=self.dropout,
            teacher_forcing_ratio=self.teacher_forcing_ratio,
        )
        return config
