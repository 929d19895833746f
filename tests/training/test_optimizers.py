"""Optimizers by name, their schedules (golden values) and the paper's uniform initialisation."""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.training.config import TrainConfig
from keras_rnmt.training.optimizers import (
    HalvingSchedule,
    WarmupSchedule,
    get_optimizer,
    plateau_decay,
    uniform_initialize,
)


def rate(schedule, step):
    return float(ops.convert_to_numpy(schedule(step)))


def test_warmup_schedule_golden_values():
    # lr(s) = peak * min(s / w, sqrt(w / s)), s = step + 1, w = 4, peak = 0.01.
    schedule = WarmupSchedule(0.01, 4)
    expected = {0: 0.0025, 1: 0.005, 3: 0.01, 15: 0.005, 63: 0.0025}
    for step, value in expected.items():
        assert rate(schedule, step) == pytest.approx(value, rel=1e-6), step


def test_halving_schedule_golden_values():
    # 10 steps an epoch, constant for 2 epochs, then halved every epoch.
    schedule = HalvingSchedule(0.7, 10, start_epoch=2)
    expected = {0: 0.7, 19: 0.7, 20: 0.35, 29: 0.35, 30: 0.175}
    for step, value in expected.items():
        assert rate(schedule, step) == pytest.approx(value, rel=1e-6), step


@pytest.mark.parametrize("schedule", [WarmupSchedule(5e-4, 100), HalvingSchedule(0.7, 10, 3)])
def test_schedule_config_round_trip(schedule):
    restored = keras.optimizers.schedules.deserialize(
        keras.optimizers.schedules.serialize(schedule))
    assert type(restored) is type(schedule)
    for step in (0, 7, 250):
        assert rate(restored, step) == rate(schedule, step)


def test_get_optimizer_by_name():
    adam = get_optimizer("adam", warmup_steps=10)
    assert isinstance(adam, keras.optimizers.Adam)
    assert isinstance(adam._learning_rate, WarmupSchedule)
    assert float(ops.convert_to_numpy(get_optimizer("adam").learning_rate)) == pytest.approx(1e-3)
    sgd = get_optimizer("paper-sgd", steps_per_epoch=5)
    assert isinstance(sgd, keras.optimizers.SGD) and sgd.global_clipnorm == 3.0


def test_bad_optimizer_settings_are_named():
    with pytest.raises(ValueError, match="Valid choices: adam, sgd, paper-sgd"):
        get_optimizer("adagrad")
    with pytest.raises(ValueError, match="own schedule"):
        get_optimizer("paper-sgd", steps_per_epoch=5, warmup_steps=10)
    with pytest.raises(ValueError, match="steps_per_epoch"):
        get_optimizer("paper-sgd")
    with pytest.raises(ValueError, match="warmup_steps"):
        WarmupSchedule(1e-3, 0)


def _built(config):
    model = build_model(config)
    model((np.ones((2, 3), "int32"), np.ones((2, 4), "int32")))
    return model


def test_uniform_initialize_draws_weights_in_range():
    model = _built(ModelConfig(source_vocab_size=12, target_vocab_size=14, embedding_dim=8,
                               encoder_units=8, decoder_units=8))
    uniform_initialize(model, 0.1, seed=3)
    for variable in model.trainable_variables:
        values = ops.convert_to_numpy(variable)
        assert np.abs(values).max() <= 0.1, variable.path
        assert values.size < 4 or values.std() > 0.02, variable.path  # drawn, not left at 0


def test_uniform_initialize_keeps_layer_norms_at_one_and_zero():
    model = _built(ModelConfig(source_vocab_size=12, target_vocab_size=14, model_type="transformer",
                               embedding_dim=8, num_heads=2, intermediate_dim=16,
                               transformer_layers=1))
    uniform_initialize(model, 0.1)
    norms = [layer for layer in model._flatten_layers()
             if isinstance(layer, keras.layers.LayerNormalization)]
    assert len(norms) == 5  # encoder block: 2, decoder block: 3
    for layer in norms:
        np.testing.assert_array_equal(ops.convert_to_numpy(layer.gamma), 1.0)
        np.testing.assert_array_equal(ops.convert_to_numpy(layer.beta), 0.0)
    dense = model.decoder.output_layer.kernel
    assert 0.05 < np.abs(ops.convert_to_numpy(dense)).max() <= 0.1


def _compiled_model(learning_rate):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(learning_rate), loss="mse")
    return model


def _lr(model):
    return float(ops.convert_to_numpy(model.optimizer.learning_rate))


def test_plateau_decay_halves_the_rate_after_patience_epochs_without_bleu_gain():
    model = _compiled_model(1e-3)
    callback = plateau_decay(0.5, patience=2)
    callback.set_model(model)
    callback.on_train_begin()
    rates = []
    for epoch, bleu in enumerate([10.0, 12.0, 11.0, 12.0, 12.5, 12.0, 11.0, 9.0]):
        callback.on_epoch_end(epoch, {"val_bleu": bleu})
        rates.append(_lr(model))
    # Epochs 2 and 3 do not beat 12.0: halved after epoch 3; 12.5 is a new best; epochs 5
    # and 6 do not beat it: halved after epoch 6; epoch 7 is the first of the next wait.
    np.testing.assert_allclose(rates, [1e-3] * 3 + [5e-4] * 3 + [2.5e-4] * 2, rtol=1e-6)


def test_plateau_decay_on_validation_loss_when_bleu_is_off():
    model = _compiled_model(1e-3)
    callback = plateau_decay(0.1, patience=0, validation_bleu=False)
    callback.set_model(model)
    callback.on_train_begin()
    callback.on_epoch_end(0, {"val_loss": 2.0})
    callback.on_epoch_end(1, {"val_loss": 1.5})
    assert _lr(model) == pytest.approx(1e-3)
    callback.on_epoch_end(2, {"val_loss": 1.6})
    assert _lr(model) == pytest.approx(1e-4)


def test_plateau_decay_settings_are_checked():
    with pytest.raises(ValueError, match=r"in \(0, 1\)"):
        plateau_decay(1.5)
    with pytest.raises(ValueError, match="constant learning rate"):
        TrainConfig(lr_decay=0.5, warmup_steps=100)
    with pytest.raises(ValueError, match="constant learning rate"):
        TrainConfig(lr_decay=0.5, optimizer="paper-sgd")
    with pytest.raises(ValueError, match=r"lr_decay must be in \(0, 1\)"):
        TrainConfig(lr_decay=2.0)


# A process of its own (8-10 s); registration is Keras', the same under every backend.
@pytest.mark.backends("jax")
def test_importing_the_package_registers_the_schedules_for_load_model():
    # A process that loads a saved run (translate, export, scoring) imports only `keras_rnmt`.
    import subprocess
    import sys

    code = ("import keras, keras_rnmt; from keras.saving import get_registered_object as get; "
            "assert get('keras_rnmt>WarmupSchedule') and get('keras_rnmt>HalvingSchedule')")
    subprocess.run([sys.executable, "-c", code], check=True)
