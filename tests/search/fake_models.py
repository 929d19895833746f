"""Step functions for the search tests: scripted Markov tables and a small random model.

Each follows the search contract ``step_fn(tokens, state) -> (log_probs, state, attention)``
with batch-major tensors, and is built from fixed numpy constants only.
"""

import keras
import numpy as np
from keras import ops

PAD, BOS, EOS, A, B, C = 0, 1, 2, 3, 4, 5


def _log(rows):
    with np.errstate(divide="ignore"):
        return np.log(np.array(rows, dtype="float64")).astype("float32")


# P(next | previous) over the vocabulary pad, <s>, </s>, a, b, c. Rows for pad and </s> are
# absorbing (only fed to empty beams). Zero probability is -inf.
SCRIPT_TABLE = _log(
    [
        #  pad  <s>  </s>   a     b     c
        [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],  # pad
        [0.0, 0.0, 0.0, 0.5, 0.4, 0.1],  # <s>
        [0.0, 0.0, 1.0, 0.0, 0.0, 0.0],  # </s>
        [0.0, 0.0, 0.6, 0.1, 0.05, 0.25],  # a
        [0.0, 0.0, 0.1, 0.0, 0.0, 0.9],  # b
        [0.0, 0.0, 0.8, 0.0, 0.0, 0.2],  # c
    ]
)

# Attention over 3 source positions emitted when the row's token is fed.
SCRIPT_ATTENTION = np.array(
    [
        [0.0, 0.0, 0.0],  # pad
        [0.5, 0.1, 0.4],  # <s>
        [0.0, 0.0, 0.0],  # </s>
        [0.6, 0.2, 0.2],  # a
        [0.2, 0.7, 0.1],  # b
        [0.3, 0.5, 0.2],  # c
    ],
    dtype="float32",
)

# A chain where </s> is unlikely, for length limits: pad, <s>, </s>, a, b. After </s> (or
# pad) it offers "a" at no cost: a search that kept expanding finished hypotheses (as
# keras-hub's BeamSampler does) would show tokens after </s>.
CHAIN_TABLE = _log(
    [
        #  pad  <s>   </s>  a    b
        [0.0, 0.0, 0.0, 1.0, 0.0],  # pad
        [0.0, 0.0, 0.05, 0.6, 0.35],  # <s>
        [0.0, 0.0, 0.0, 1.0, 0.0],  # </s>
        [0.0, 0.0, 0.1, 0.2, 0.7],  # a
        [0.0, 0.0, 0.3, 0.6, 0.1],  # b
    ]
)
CHAIN_ATTENTION = SCRIPT_ATTENTION[:5]


def table_step(table, attention=None):
    """A Markov "model": log P(y_t | y_{t-1}) = table[y_{t-1}]; the state counts steps."""

    def step_fn(tokens, state):
        # The search contract: int32 ids, one per row of the batch-major state.
        assert keras.backend.standardize_dtype(tokens.dtype) == "int32", tokens.dtype
        log_probs = ops.take(table, tokens, axis=0)
        weights = None if attention is None else ops.take(attention, tokens, axis=0)
        return log_probs, {"steps": state["steps"] + 1}, weights

    return step_fn


def table_state(batch_size):
    return {"steps": ops.zeros((batch_size,), dtype="int32")}


class RandomModel:
    """A tiny recurrent model with attention, from fixed random weights.

    The state nests a tuple and a dict, as a real decoder's would: ``{"rnn": (h,),
    "memory": (N, S, H), "time": (N,)}``. ``h`` depends on the whole history, so a wrong
    beam reordering changes the output.
    """

    def __init__(self, seed, vocab_size=7, units=8, source_length=4, eos_logit=0.0):
        rng = np.random.default_rng(seed)
        self.vocab_size, self.units, self.source_length = vocab_size, units, source_length
        self.embedding = rng.normal(size=(vocab_size, units)).astype("float32")
        self.recurrent = (rng.normal(size=(units, units)) / np.sqrt(units)).astype("float32")
        self.output = (2.0 * rng.normal(size=(units, vocab_size))).astype("float32")
        self.output_bias = np.zeros((vocab_size,), dtype="float32")
        self.output_bias[EOS] = eos_logit
        self.rng = rng

    def initial_state(self, batch_size):
        h = self.rng.normal(size=(batch_size, self.units)).astype("float32")
        memory = self.rng.normal(size=(batch_size, self.source_length, self.units))
        return {
            "rnn": (ops.convert_to_tensor(h),),
            "memory": ops.convert_to_tensor(memory.astype("float32")),
            "time": ops.zeros((batch_size,), dtype="int32"),
        }

    def logits(self, tokens, state):
        # The weights become tensors on the backend's device (numpy + a CUDA tensor fails).
        embedding, recurrent, output, output_bias = (ops.convert_to_tensor(w) for w in (
            self.embedding, self.recurrent, self.output, self.output_bias))
        (h,) = state["rnn"]
        h = ops.tanh(ops.matmul(h, recurrent) + ops.take(embedding, tokens, axis=0))
        scores = ops.einsum("nsh,nh->ns", state["memory"], h)
        attention = ops.softmax(scores, axis=-1)
        context = ops.einsum("ns,nsh->nh", attention, state["memory"])
        logits = ops.matmul(h + context, output) + output_bias
        new_state = {"rnn": (h,), "memory": state["memory"], "time": state["time"] + 1}
        return logits, new_state, attention

    def step(self, tokens, state):
        logits, new_state, attention = self.logits(tokens, state)
        return ops.log_softmax(logits, axis=-1), new_state, attention

    def fixed_length_step(self):
        """A variant that emits </s> exactly at step ``state["stop"]`` (N,), and only there.

        After </s> it keeps emitting </s> at log-probability 0, so a finished hypothesis
        never changes score (keras-hub's BeamSampler keeps expanding finished beams).
        """

        def step_fn(tokens, state):
            inner = {key: state[key] for key in ("rnn", "memory", "time")}
            logits, new_state, attention = self.logits(tokens, inner)
            is_eos = (ops.arange(self.vocab_size) == EOS)[None, :]
            free = ops.log_softmax(ops.where(is_eos, float("-inf"), logits), axis=-1)
            forced = ops.where(is_eos, 0.0, float("-inf"))
            stop = (state["time"] >= state["stop"])[:, None]
            log_probs = ops.where(stop, forced, free)
            return log_probs, dict(new_state, stop=state["stop"]), attention

        return step_fn
