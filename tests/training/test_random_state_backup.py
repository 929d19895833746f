"""`keras_rnmt.training.resume`: the random state a resumed run takes back, and the data epoch.

End to end (a killed run trains on as if it had never stopped, every backend):
`tests/training/test_train.py`."""

import os

import keras
import numpy as np
import pytest

from keras_rnmt.training.resume import DataEpoch, RandomStateBackup, random_states


def _model():
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dropout(0.5),
                              keras.layers.Dense(3), keras.layers.Dropout(0.5)])
    model.compile(optimizer="adam", loss="mse")
    return model


def _states(model):
    return [keras.ops.convert_to_numpy(variable.value) for variable in random_states(model)]


def test_random_states_are_what_save_weights_leaves_out():
    model = _model()
    states = random_states(model)
    assert len(states) == 2  # one seed generator per dropout layer
    assert all("seed_generator_state" in variable.path for variable in states)
    assert not {id(v) for v in states} & {id(v) for v in model.weights}


def test_a_resumed_model_takes_back_the_state_its_epoch_started_from(tmp_path, capsys):
    backup = str(tmp_path / "backup")
    model = _model()
    callback = RandomStateBackup(backup)
    callback.set_model(model)
    x, y = np.ones((8, 4), "float32"), np.zeros((8, 3), "float32")
    model.fit(x, y, epochs=3, verbose=0, callbacks=[callback])
    # The state each epoch starts from, the last two kept.
    assert sorted(os.listdir(backup)) == ["random_state-2.npz", "random_state-3.npz"]
    after = _states(model)

    fresh = _model()
    for variable in random_states(fresh):
        variable.assign(np.full(variable.shape, 7, variable.dtype))
    assert not any((state == 7).all() for state in after)
    resumed = RandomStateBackup(backup)
    resumed.set_model(fresh)
    resumed.on_train_begin()
    resumed.on_epoch_begin(3)
    assert capsys.readouterr().out == (
        f"resumed at epoch 4 from {backup} (weights, optimizer and dropout's random state)\n")
    for got, want in zip(_states(fresh), after, strict=True):
        np.testing.assert_array_equal(got, want)
    # Only the process' first epoch restores.
    for variable in random_states(fresh):
        variable.assign(np.full(variable.shape, 7, variable.dtype))
    resumed.on_epoch_begin(2)  # its file is there
    assert all((state == 7).all() for state in _states(fresh))


def test_a_run_backed_up_without_random_state_resumes_with_a_warning(tmp_path):
    callback = RandomStateBackup(str(tmp_path / "backup"))
    callback.set_model(_model())
    with pytest.warns(UserWarning, match=r"random_state-2\.npz is missing: the run resumes at "
                                         r"epoch 3 with the dropout masks of a fresh start"):
        callback.on_epoch_begin(2)


def test_random_state_of_another_model_is_refused(tmp_path):
    backup = tmp_path / "backup"
    saver = RandomStateBackup(str(backup))
    saver.set_model(_model())
    saver.on_epoch_end(0)
    other = keras.Sequential([keras.Input((4,)), keras.layers.Dropout(0.5),
                              keras.layers.Dense(3)])
    loader = RandomStateBackup(str(backup))
    loader.set_model(other)
    with pytest.raises(ValueError, match="random_state-1.npz holds random states of shapes "
                                         r"\[\(2,\), \(2,\)\], the model has \[\(2,\)\]"):
        loader.on_epoch_begin(1)


def test_data_epoch_follows_fit():
    seen = []

    class Record(keras.callbacks.Callback):
        def on_epoch_begin(self, epoch, logs=None):
            seen.append(int(data_epoch.variable.numpy()))

    data_epoch = DataEpoch()
    model = _model()
    model.fit(np.ones((8, 4), "float32"), np.zeros((8, 3), "float32"), epochs=3, verbose=0,
              callbacks=[data_epoch, Record()])
    assert seen == [0, 1, 2]
