"""Shared test helpers for the attention layers.

- tiny fixed inputs and a heavily padded batch;
- plain-numpy re-derivations of the formulas (softmax, additive score, LSTM, GRU, window),
  written independently of the layers (loops where that is clearer);
- `AttentionUnroll`, a tiny registered model that runs an attention over T target steps with
  `keras_rnmt.loop.scan` (so `step` is a traced tensor under JAX / tf.function);
- `CHECKS` / `run_check`: the scrutiny every variant gets (masking, mixed precision, config
  round trip, `.keras` save/reload, traced loop, one training step).
"""

import inspect

import keras
import numpy as np
from keras import ops

from keras_rnmt.attention import get_attention
from keras_rnmt.loop import scan

# ---------------------------------------------------------------------------- inputs
# B=2, S=3, dims 2; the second row has one pad whose memory is garbage on purpose.
QUERY = np.array([[1.0, -0.5], [0.3, 0.8]], dtype="float32")
QUERY_2 = np.array([[-0.4, 0.9], [0.7, -0.2]], dtype="float32")  # the query of step 2
MEMORY = np.array(
    [[[1.0, 0.0], [0.0, 1.0], [0.5, -0.5]], [[-1.0, 0.5], [0.2, 0.3], [9.0, 9.0]]],
    dtype="float32",
)
MASK = np.array([[True, True, True], [True, True, False]])

# Simple sentences for the hand-computed literal values: the query [1, 0] reads h_i[0].
LITERAL_QUERY = np.array([[1.0, 0.0], [1.0, 0.0]], dtype="float32")
LITERAL_MEMORY = np.array(
    [[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]], [[0.0, 0.0], [1.0, 0.0], [5.0, 5.0]]], dtype="float32"
)
# An additive score whose energy is tanh(h_i[0]): W_a picks h[0], U_a = 0, v_a picks unit 0.
PICK_FIRST = np.array([[1.0, 0.0], [0.0, 0.0]], dtype="float32")
PICK_UNIT_0 = np.array([[1.0], [0.0]], dtype="float32")

# Constant weights for golden tests (named after the equations).
W_A = np.array([[0.5, -0.3], [0.2, 0.8]], dtype="float32")  # memory side, Dm x units
U_A = np.array([[-0.6, 0.4], [0.1, 0.7]], dtype="float32")  # query side, Dq x units
V_A = np.array([[1.2], [-0.9]], dtype="float32")  # units x 1


def padded_batch(seed=0, batch=4, src_len=20, query_dim=6, memory_dim=6, scale=3.0):
    """A heavily padded batch: real lengths 20, 1, 2, 7 (rows beyond 4 repeat them)."""
    rng = np.random.default_rng(seed)
    lengths = [20, 1, 2, 7] * ((batch + 3) // 4)
    mask = np.arange(src_len)[None, :] < np.array(lengths[:batch])[:, None]
    memory = (scale * rng.normal(size=(batch, src_len, memory_dim))).astype("float32")
    query = (scale * rng.normal(size=(batch, query_dim))).astype("float32")
    return query, memory, mask


def to_numpy(x):
    return np.asarray(ops.convert_to_numpy(ops.cast(x, "float32")))


def dtype_name(x):
    return keras.backend.standardize_dtype(x.dtype)


def make_variant(name):
    """The small layer each registered name is checked with. Its sizes, like those of
    `padded_batch()`, match the docstring examples, so JAX compiles each operation shape once
    for the whole folder."""
    options = {
        "local-m": {"window": 2},
        "local-p": {"window": 2},
        "dot": {},
        "general": {},
        "concat": {},
        "recurrent": {"units": 8, "window": 1, "memory_units": 4},
    }
    return get_attention(name, **options.get(name, {"units": 8}))


# ---------------------------------------------------------------------------- numpy reference
def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def np_masked_softmax(energies, mask):
    """Softmax over the real tokens of each row; exactly 0 on pads."""
    out = np.zeros_like(energies, dtype="float64")
    for b in range(energies.shape[0]):
        real = np.where(mask[b])[0]
        exps = np.exp(energies[b, real] - energies[b, real].max())
        out[b, real] = exps / exps.sum()
    return out


def np_context(weights, memory):
    return np.einsum("bs,bsd->bd", weights, memory)


def np_additive(query, memory, w_a, u_a, v_a, extra=0.0):
    """v_a^T tanh(W_a h_i + U_a s [+ extra_i]) for every i: (B, S)."""
    hidden = np.tanh(memory @ w_a + (query @ u_a)[:, None, :] + extra)
    return (hidden @ v_a)[..., 0]


def np_lstm(x, h, c, kernel, recurrent_kernel, bias):
    """One LSTM step, gates in Keras order i, f, c, o. x: (..., In); h, c: (..., U)."""
    z = x @ kernel + h @ recurrent_kernel + bias
    i, f, g, o = np.split(z, 4, axis=-1)
    c_new = sigmoid(f) * c + sigmoid(i) * np.tanh(g)
    return sigmoid(o) * np.tanh(c_new), c_new


def np_window(weights, k):
    """window[b, i, m] = weights[b, i - k + m], 0 outside [0, S): plain loops."""
    batch, src_len = weights.shape
    out = np.zeros((batch, src_len, 2 * k + 1))
    for b in range(batch):
        for i in range(src_len):
            for m in range(2 * k + 1):
                source = i - k + m
                if 0 <= source < src_len:
                    out[b, i, m] = weights[b, source]
    return out


# ---------------------------------------------------------------------------- layer utilities
def set_sublayer_weights(layer, **weights):
    """`set_sublayer_weights(layer, energy=[V], memory_cell=[K, R, b])`."""
    for name, arrays in weights.items():
        getattr(layer, name).set_weights([np.asarray(a, dtype="float32") for a in arrays])


def build(layer, query=QUERY, memory=MEMORY):
    layer.build(query.shape, memory.shape)
    return layer


def run_steps(layer, queries, memory, mask, steps=None):
    """Call the layer step by step from `initial_state`; returns lists of numpy arrays."""
    queries = list(queries) if isinstance(queries, (list, tuple)) else [queries] * steps
    keys = layer.prepare(memory, mask)
    state = layer.initial_state(memory, mask)
    contexts, weights, states = [], [], []
    for step, query in enumerate(queries):
        context, alpha, state = layer(query, memory, keys, mask=mask, state=state, step=step)
        contexts.append(context)
        weights.append(alpha)
        states.append(state)
    return contexts, weights, states


@keras.saving.register_keras_serializable(package="keras_rnmt_tests")
class AttentionUnroll(keras.Model):
    """Run an attention over T target steps: `{"queries" (B,T,Dq), "memory", "mask"}` ->
    `{"context" (B,T,Dm), "weights" (B,T,S)}`, looping with `keras_rnmt.loop.scan` (the
    decoder's loop)."""

    def __init__(self, attention, **kwargs):
        super().__init__(**kwargs)
        self.attention = attention

    def build(self, input_shape):
        if self.attention.built:  # deserialized layers arrive built (their build config)
            return
        query_shape = (input_shape["queries"][0], input_shape["queries"][2])
        self.attention.build(query_shape, tuple(input_shape["memory"]))

    def call(self, inputs):
        queries, memory, mask = inputs["queries"], inputs["memory"], inputs["mask"]
        keys = self.attention.prepare(memory, mask)
        state = self.attention.initial_state(memory, mask)

        def step_fn(state, x):
            query, step = x
            context, weights, state = self.attention(
                query, memory, keys, mask=mask, state=state, step=step
            )
            return state, (context, weights)

        time_major = ops.transpose(queries, (1, 0, 2))
        steps = ops.arange(ops.shape(queries)[1], dtype="int32")
        _, (contexts, weights) = scan(step_fn, state, (time_major, steps))
        return {
            "context": ops.transpose(contexts, (1, 0, 2)),
            "weights": ops.transpose(weights, (1, 0, 2)),
        }

    def get_config(self):
        config = super().get_config()
        config["attention"] = keras.saving.serialize_keras_object(self.attention)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["attention"] = keras.saving.deserialize_keras_object(config["attention"])
        return cls(**config)


# ---------------------------------------------------------------------------- shared checks
def check_masking(make_layer, steps=3, normalised=True):
    """Weights exactly 0 on pads, sum 1 over real tokens (global variants) or <= 1 (local)."""
    query, memory, mask = padded_batch()
    layer = make_layer()
    layer.build(query.shape, memory.shape)
    _, weights, _ = run_steps(layer, query, memory, mask, steps=steps)
    for alpha in weights:
        assert dtype_name(alpha) == "float32"
        alpha = to_numpy(alpha)
        assert np.all(alpha[~mask] == 0.0)
        assert np.all(alpha >= 0.0)
        sums = alpha.sum(axis=-1)
        if normalised:
            np.testing.assert_allclose(sums, 1.0, rtol=1e-5)
        else:
            assert np.all(sums <= 1.0 + 1e-5)


def check_mixed_precision(make_layer, policy, steps=3, normalised=True):
    """Under a mixed policy: float32 variables, low-precision context, float32 weights and
    state, finite everywhere, pads exactly 0, even with 1-2 real tokens out of 20."""
    keras.config.set_dtype_policy(policy)
    compute = policy.split("_")[1]
    query, memory, mask = padded_batch(seed=1)
    layer = make_layer()
    layer.build(query.shape, memory.shape)
    assert layer.compute_dtype == compute
    assert all(dtype_name(v) == "float32" for v in layer.weights)
    contexts, weights, states = run_steps(layer, query, memory, mask, steps=steps)
    for context, alpha, state in zip(contexts, weights, states):
        assert dtype_name(context) == compute
        assert dtype_name(alpha) == "float32"
        assert all(dtype_name(tensor) == "float32" for tensor in state)
        for tensor in (context, alpha, *state):
            assert np.all(np.isfinite(to_numpy(tensor)))
        alpha = to_numpy(alpha)
        assert np.all(alpha[~mask] == 0.0)
        if normalised:
            np.testing.assert_allclose(alpha.sum(axis=-1), 1.0, rtol=1e-3)


def check_config_round_trip(make_layer, steps=2):
    """`get_config()` holds exactly the constructor arguments; `from_config` rebuilds a layer
    that, with the weights copied, gives the same outputs."""
    layer = make_layer()
    config = layer.get_config()
    cls = type(layer)
    parameters = set(inspect.signature(cls.__init__).parameters) - {"self", "kwargs"}
    assert set(config) - {"name", "trainable", "dtype"} == parameters
    clone = cls.from_config(config)
    assert clone.get_config() == config
    query, memory, mask = padded_batch(seed=2)
    layer.build(query.shape, memory.shape)
    clone.build(query.shape, memory.shape)
    clone.set_weights(layer.get_weights())
    expected = run_steps(layer, query, memory, mask, steps=steps)
    actual = run_steps(clone, query, memory, mask, steps=steps)
    for want, got in zip(expected[:2], actual[:2]):
        for a, b in zip(want, got):
            np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def unroll_inputs(seed=3, steps=3):
    query, memory, mask = padded_batch(seed=seed)
    rng = np.random.default_rng(seed)
    queries = rng.normal(size=(query.shape[0], steps, query.shape[1])).astype("float32")
    return {"queries": queries, "memory": memory, "mask": mask}


def check_save_reload(make_layer, tmp_path):
    """Inside a model saved to `.keras` and reloaded, the layer comes back with the same
    config and weights and gives identical outputs."""
    inputs = unroll_inputs()
    model = AttentionUnroll(make_layer())
    model.build({name: value.shape for name, value in inputs.items()})
    path = str(tmp_path / "attention.keras")
    model.save(path)
    reloaded = keras.saving.load_model(path)
    assert type(reloaded.attention) is type(model.attention)
    assert reloaded.attention.get_config() == model.attention.get_config()
    queries = list(np.moveaxis(inputs["queries"], 1, 0))
    want = run_steps(model.attention, queries, inputs["memory"], inputs["mask"])
    got = run_steps(reloaded.attention, queries, inputs["memory"], inputs["mask"])
    for expected, actual in zip(want[0] + want[1], got[0] + got[1]):
        np.testing.assert_array_equal(to_numpy(actual), to_numpy(expected))


def check_traced_loop(make_layer):
    """Inside `loop.scan` run by `predict` (a traced `step` under JAX's scan and TensorFlow's
    tf.function, a Python loop under PyTorch) the layer matches a plain loop of calls."""
    inputs = unroll_inputs()
    model = AttentionUnroll(make_layer())
    model.jit_compile = False  # traced, without the cost of an XLA compile
    traced = model.predict_on_batch(inputs)
    queries = list(np.moveaxis(inputs["queries"], 1, 0))
    contexts, weights, _ = run_steps(model.attention, queries, inputs["memory"], inputs["mask"])
    for t in range(len(queries)):
        # rtol too: on a GPU the traced and eager kernels round values near 5 apart by 2e-6.
        np.testing.assert_allclose(traced["context"][:, t], to_numpy(contexts[t]),
                                   rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(traced["weights"][:, t], to_numpy(weights[t]),
                                   rtol=1e-6, atol=1e-6)


def check_one_training_step(make_layer):
    """One SGD step through T=3 decoder steps in the traced `loop.scan` of `fit`.

    The loss `fit` reports (computed by the traced loop, before the update) equals the loss of
    a plain Python loop of calls, and the step moves every trainable variable: gradients reach
    every part of the score, the memory / coverage updates and the position network.
    """
    inputs = unroll_inputs(seed=4)
    model = AttentionUnroll(make_layer())
    model.build({name: value.shape for name, value in inputs.items()})
    queries = list(np.moveaxis(inputs["queries"], 1, 0))
    contexts, _, _ = run_steps(model.attention, queries, inputs["memory"], inputs["mask"])
    contexts = np.stack([to_numpy(context) for context in contexts], axis=1)
    expected_loss = np.mean(np.square(contexts - 1.0))

    before = [to_numpy(v).copy() for v in model.trainable_weights]
    assert before
    model.compile(
        optimizer=keras.optimizers.SGD(learning_rate=1.0),
        loss={"context": "mse", "weights": None},
        # Fastest to trace here: one XLA compile under JAX, a plain tf.function otherwise.
        jit_compile=keras.backend.backend() == "jax",
    )
    target = np.ones_like(contexts)
    history = model.fit(inputs, {"context": target}, batch_size=len(target), verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], expected_loss, rtol=1e-5)
    for variable, old in zip(model.trainable_weights, before):
        assert not np.array_equal(to_numpy(variable), old), f"{variable.path} got no gradient"


# Cheap checks, run for every variant.
CHECKS = ("masking", "mixed_float16", "mixed_bfloat16", "config_round_trip", "save_reload")
# Checks that compile a loop (seconds each): run for the variants where they test something
# the others do not (a traced `step`, a recurrent state, an indirect gradient path). Both
# compare the traced loop with a plain Python loop of calls.
TRACED_CHECKS = ("traced_loop", "training_step")


def run_checks(subtests, checks, make_layer, tmp_path, normalised=True, variant=""):
    """Run several checks in one test, each reported as a subtest (few test items keep the
    per-test set-up cost of the suite's autouse fixture, a full garbage collection, low)."""
    for check in checks:
        with subtests.test(variant=variant, check=check):
            folder = tmp_path / f"{variant}_{check}"
            folder.mkdir()
            run_check(check, make_layer, folder, normalised=normalised)


def run_check(check, make_layer, tmp_path, normalised=True):
    """Run one of `CHECKS` or `TRACED_CHECKS` (keras-hub's `run_layer_test` in spirit).

    `normalised=False` for local attention, whose weights sum to at most 1.
    """
    if check == "masking":
        check_masking(make_layer, normalised=normalised)
    elif check.startswith("mixed_"):
        try:
            check_mixed_precision(make_layer, check, normalised=normalised)
        finally:
            keras.config.set_dtype_policy("float32")
    elif check == "config_round_trip":
        check_config_round_trip(make_layer)
    elif check == "save_reload":
        check_save_reload(make_layer, tmp_path)
    elif check == "traced_loop":
        check_traced_loop(make_layer)
    elif check == "training_step":
        check_one_training_step(make_layer)
    else:
        raise ValueError(f"Unknown check {check!r}; valid: {CHECKS + TRACED_CHECKS}")
