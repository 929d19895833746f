"""Resuming a killed run (`BackupAndRestore`): best-model saving, early stopping and the
plateau decay go on from the best-model record instead of starting over."""

import json

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.training.callbacks import BleuCallback, best_record_path, resumed_best
from keras_rnmt.training.optimizers import plateau_decay

REFERENCES = ["a man rides a red bike .", "two dogs run on the grass ."]


def _model():
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(1e-3), loss="mse")
    return model


def _record(best_path, epoch, bleu):
    with open(best_record_path(best_path), "w") as f:
        json.dump({"epoch": epoch, "val_bleu": bleu}, f)


def _callback(best_path, hypotheses, patience=3):
    callback = BleuCallback(lambda model: (lambda sources: hypotheses), ["x", "y"], REFERENCES,
                            str(best_path), patience=patience)
    callback.set_model(_model())
    callback.on_train_begin()
    return callback


def test_resumed_best_reads_the_record_only_for_a_later_start(tmp_path):
    best = tmp_path / "best.keras"
    assert resumed_best(str(best), 3) is None  # no record
    _record(best, 2, 30.0)
    assert resumed_best(str(best), 0) is None  # a fresh start ignores an old record
    assert resumed_best(str(best), 1) is None  # a record from a later epoch: not this run's
    assert resumed_best(str(best), 2) == {"epoch": 2, "val_bleu": 30.0}


def test_a_resumed_run_keeps_its_best_model_and_counts_patience_on(tmp_path):
    best = tmp_path / "best.keras"
    _record(best, 2, 30.0)  # epochs 1-2 ran, 2 was the best; killed after epoch 4
    callback = _callback(best, ["nothing matches", "here"], patience=3)
    callback.on_epoch_begin(4)
    assert (callback.best, callback.wait) == (30.0, 2)
    logs = {}
    callback.on_epoch_end(4, logs)  # BLEU 0: no new best, the third epoch without one
    assert logs["val_bleu"] == 0.0
    assert not best.exists()  # the worse model did not replace the best one
    assert json.loads(best.with_suffix(".json").read_text())["epoch"] == 2
    assert callback.model.stop_training


def test_a_fresh_start_ignores_an_old_record(tmp_path):
    best = tmp_path / "best.keras"
    _record(best, 5, 90.0)
    callback = _callback(best, REFERENCES[:1] + ["two dogs run ."])
    callback.on_epoch_begin(0)
    callback.on_epoch_end(0, {})
    assert best.exists()
    record = json.loads(best.with_suffix(".json").read_text())
    assert record["epoch"] == 1 and 0 < record["val_bleu"] < 90


@pytest.mark.parametrize("resumed, want", [(True, 5e-4), (False, 1e-3)])
def test_plateau_decay_resumes_its_wait_from_the_record(tmp_path, resumed, want):
    best = tmp_path / "best.keras"
    _record(best, 2, 30.0)
    model = _model()
    callback = plateau_decay(0.5, patience=2, best_path=str(best) if resumed else None)
    callback.set_model(model)
    callback.on_train_begin()
    # Killed after epoch 3 (one epoch without a gain), resumed at epoch index 3: one more
    # epoch without a gain is the second, so the rate halves; started over, it would be
    # the first epoch and a new best.
    callback.on_epoch_begin(3)
    callback.on_epoch_end(3, {"val_bleu": 29.0})
    assert float(ops.convert_to_numpy(model.optimizer.learning_rate)) == pytest.approx(want)
    assert np.isfinite(callback.best)
