"""`log.csv` bookkeeping across restarts: epochs and their wall time."""

import csv

import keras
import numpy as np

from keras_rnmt.training.run_log import EpochTimer, logged_epochs, logged_training_seconds


def _fit(run_dir, epochs, initial_epoch=0):
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    x, y = np.ones((4, 2), "float32"), np.zeros((4, 1), "float32")
    model.fit(x, y, validation_data=(x, y), epochs=epochs, initial_epoch=initial_epoch,
              verbose=0, callbacks=[
        EpochTimer(str(run_dir)),
        keras.callbacks.CSVLogger(str(run_dir / "log.csv"), append=True),
    ])


def _rows(run_dir):
    with open(run_dir / "log.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_a_run_without_a_log_has_no_epochs_and_no_time(tmp_path):
    assert logged_epochs(str(tmp_path)) == 0
    assert logged_training_seconds(str(tmp_path)) is None


def test_epoch_seconds_are_logged_and_summed_across_processes(tmp_path):
    _fit(tmp_path, epochs=2)
    _fit(tmp_path, epochs=3, initial_epoch=2)  # a second process appends its epoch
    rows = _rows(tmp_path)
    assert [int(row["epoch"]) for row in rows] == [0, 1, 2]
    seconds = [float(row["epoch_seconds"]) for row in rows]
    assert all(s > 0 for s in seconds)
    assert logged_epochs(str(tmp_path)) == 3
    assert logged_training_seconds(str(tmp_path)) == sum(seconds)


def test_a_log_begun_without_the_column_keeps_its_rows_aligned(tmp_path):
    (tmp_path / "log.csv").write_text("epoch,loss,val_loss\n0,1.5,1.6\n")
    _fit(tmp_path, epochs=2, initial_epoch=1)
    rows = _rows(tmp_path)
    assert list(rows[1]) == ["epoch", "loss", "val_loss"] and rows[1]["epoch"] == "1"
    assert None not in rows[1]  # no value spilled past the header
    assert logged_epochs(str(tmp_path)) == 2
    assert logged_training_seconds(str(tmp_path)) is None
