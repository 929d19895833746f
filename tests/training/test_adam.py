"""`keras_rnmt.training.adam.Adam`: Keras' Adam update on every backend, one fused kernel
under PyTorch, and a config that round-trips."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.training.adam import Adam
from keras_rnmt.training.optimizers import get_optimizer

SHAPES = [(7, 5), (5,), (3, 4, 2)]


def run_steps(optimizer, steps=6, dtype="float32", scale=1.0, seed=0):
    """The variables after `steps` updates from the same start and gradients."""
    rng = np.random.default_rng(seed)
    variables = [keras.Variable(rng.normal(size=s).astype(dtype)) for s in SHAPES]
    for step in range(steps):
        grads = [(rng.normal(size=s) * scale * (step + 1)).astype(dtype) for s in SHAPES]
        optimizer.apply([ops.convert_to_tensor(g) for g in grads], variables)
    return [ops.convert_to_numpy(v) for v in variables]


@pytest.fixture
def fused_calls(monkeypatch):
    """The number of `torch._fused_adam_` calls made (None off PyTorch)."""
    if keras.backend.backend() != "torch":
        return None
    import torch

    calls = []
    fused = torch._fused_adam_
    monkeypatch.setattr(torch, "_fused_adam_", lambda *a, **k: calls.append(1) or fused(*a, **k))
    return calls


@pytest.mark.parametrize("clip", [None, 1.0, 1e4], ids=["no-clip", "clipped", "clip-inactive"])
@pytest.mark.parametrize("amsgrad", [False, True])
def test_the_update_is_keras_adam(clip, amsgrad, fused_calls):
    ours = run_steps(Adam(1e-2, global_clipnorm=clip, amsgrad=amsgrad))
    keras_adam = run_steps(keras.optimizers.Adam(1e-2, global_clipnorm=clip, amsgrad=amsgrad))
    for a, b in zip(ours, keras_adam):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6)  # rounding: |θ| ~ 1, 6 steps
    if fused_calls is not None:
        assert len(fused_calls) == 6  # one kernel call per step under PyTorch


def test_a_learning_rate_schedule_and_moments_match_keras_adam():
    schedule = keras.optimizers.schedules.ExponentialDecay(1e-2, decay_steps=2, decay_rate=0.5)
    ours, theirs = Adam(schedule, global_clipnorm=1.0), keras.optimizers.Adam(
        schedule, global_clipnorm=1.0)
    for a, b in zip(run_steps(ours), run_steps(theirs)):
        np.testing.assert_allclose(a, b, rtol=0, atol=2e-6)
    for a, b in zip(ours.variables, theirs.variables):  # iterations, rate, m, v
        np.testing.assert_allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b), rtol=1e-5,
                                   atol=1e-9, err_msg=a.path)


def test_a_non_finite_gradient_norm_poisons_the_weights_as_keras_clipping_does():
    for optimizer in (Adam(1e-2, global_clipnorm=1.0), keras.optimizers.Adam(
            1e-2, global_clipnorm=1.0)):
        variable = keras.Variable(np.ones(3, "float32"))
        optimizer.apply([ops.convert_to_tensor(np.array([np.inf, 1.0, 0.0], "float32"))],
                        [variable])
        assert np.isnan(ops.convert_to_numpy(variable)).all(), type(optimizer)


def test_float64_weights_take_keras_path_with_the_same_result(fused_calls):
    ours = run_steps(Adam(1e-2, global_clipnorm=1.0), dtype="float64")
    theirs = run_steps(keras.optimizers.Adam(1e-2, global_clipnorm=1.0), dtype="float64")
    # Under PyTorch Keras' Adam runs its `_foreach` path and this fallback Keras' generic
    # per-variable `update_step`; the two differ by about 5e-10 here (the rate is float32).
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-8)
    if fused_calls is not None:
        assert fused_calls == []


def test_get_optimizer_gives_it_and_a_saved_model_reloads_it(tmp_path):
    optimizer = get_optimizer("adam", 5e-4, clipnorm=1.0)
    assert type(optimizer) is Adam
    assert Adam.from_config(optimizer.get_config()).get_config() == optimizer.get_config()
    config = ModelConfig(source_vocab_size=20, target_vocab_size=20, embedding_dim=4,
                         encoder_units=4, decoder_units=8, attention="bahdanau")
    model = build_model(config)
    model.compile(optimizer=optimizer, loss="sparse_categorical_crossentropy")
    source = np.array([[5, 6, 3]], "int32")
    model.fit((source, source), source, epochs=1, verbose=0)
    model.save(tmp_path / "m.keras")
    reloaded = keras.saving.load_model(tmp_path / "m.keras")
    assert type(reloaded.optimizer) is Adam
    assert reloaded.optimizer.get_config() == optimizer.get_config()
    for a, b in zip(reloaded.optimizer.variables, optimizer.variables):
        np.testing.assert_array_equal(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
