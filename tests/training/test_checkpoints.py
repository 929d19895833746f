"""Epoch checkpoints and checkpoint averaging: golden means, file keeping, the CLI, errors."""

import os

import keras
import numpy as np
import pytest
from run_helpers import SOURCES, save_run, tiny_parts

from keras_rnmt.cli import main
from keras_rnmt.training.checkpoints import (
    EpochCheckpoints,
    average_checkpoints,
    average_weights,
    checkpoint_path,
    list_checkpoints,
)
from keras_rnmt.translator import Translator


class _Counter(keras.layers.Layer):
    """A Dense-like layer with an integer variable, which averaging must not average."""

    def build(self, input_shape):
        self.kernel = self.add_weight(shape=(input_shape[-1], 2), initializer="zeros")
        self.steps = self.add_weight(shape=(), initializer="zeros", dtype="int32",
                                     trainable=False)

    def call(self, x):
        return keras.ops.matmul(x, self.kernel)


def _counter_model():
    inputs = keras.Input((3,))
    return keras.Model(inputs, _Counter()(inputs))


def test_average_weights_is_the_mean_of_floats_and_the_last_of_integers(tmp_path):
    model = _counter_model()
    layer = model.layers[-1]
    paths = []
    for i, (value, steps) in enumerate([(1.0, 4), (2.0, 7), (6.0, 9)]):
        layer.kernel.assign(np.full((3, 2), value, "float32"))
        layer.steps.assign(steps)
        paths.append(str(tmp_path / f"{i}.weights.h5"))
        model.save_weights(paths[-1])
    average_weights(model, paths)
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer.kernel), np.full((3, 2), 3.0))
    assert int(keras.ops.convert_to_numpy(layer.steps)) == 9
    average_weights(model, paths[:2])
    np.testing.assert_allclose(keras.ops.convert_to_numpy(layer.kernel), np.full((3, 2), 1.5))
    with pytest.raises(ValueError, match="at least one"):
        average_weights(model, [])
    with pytest.raises(FileNotFoundError, match="missing.weights.h5"):
        average_weights(model, [str(tmp_path / "missing.weights.h5")])


@pytest.fixture
def checkpointed_run(tmp_path):
    """A tiny run directory with `best.keras` and the checkpoints of epochs 2 and 3 (epoch 1
    deleted by `keep=2`), each epoch's weights the seed-0 weights plus the epoch number."""
    model, source_tokenizer, target_tokenizer = tiny_parts()
    path = save_run(str(tmp_path / "run"), model, source_tokenizer, target_tokenizer)
    base = [keras.ops.convert_to_numpy(v) for v in model.weights]
    callback = EpochCheckpoints(path, keep=2)
    callback.set_model(model)
    for epoch in range(3):
        for variable, value in zip(model.weights, base):
            variable.assign(value + (epoch + 1))
        callback.on_epoch_end(epoch)
    return path, base


def test_epoch_checkpoints_keep_the_newest_files(checkpointed_run):
    path, _ = checkpointed_run
    assert [epoch for epoch, _ in list_checkpoints(path)] == [2, 3]
    assert not os.path.exists(checkpoint_path(path, 1))
    with pytest.raises(ValueError, match="keep must be >= 1"):
        EpochCheckpoints(path, keep=0)


def test_average_checkpoints_writes_a_model_the_translator_loads(checkpointed_run):
    path, base = checkpointed_run
    written, epochs = average_checkpoints(path, last=2)
    assert written == os.path.join(path, "averaged.keras") and epochs == [2, 3]
    averaged = keras.saving.load_model(written)
    for variable, value in zip(averaged.weights, base):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), value + 2.5, rtol=1e-6)
    translator = Translator.from_run(path, model_file="averaged.keras", beam_size=2)
    assert len(translator(SOURCES)) == len(SOURCES)
    _, epochs = average_checkpoints(path, epochs=[3], output="third.keras")
    third = keras.saving.load_model(os.path.join(path, "third.keras"))
    for variable, value in zip(third.weights, base):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(variable), value + 3, rtol=1e-6)


def test_average_checkpoints_errors_name_the_choices(checkpointed_run, tmp_path):
    path, _ = checkpointed_run
    with pytest.raises(ValueError, match=r"last must be in 1..2 \(the checkpoints of epochs "
                                         r"\[2, 3\]\)"):
        average_checkpoints(path, last=3)
    with pytest.raises(ValueError, match=r"epoch\(s\) \[1\].*available: \[2, 3\]"):
        average_checkpoints(path, epochs=[1, 2])
    with pytest.raises(ValueError, match="exactly one of"):
        average_checkpoints(path, last=1, epochs=[2])
    empty = save_run(str(tmp_path / "empty"), *tiny_parts())
    with pytest.raises(FileNotFoundError, match="--keep-checkpoints"):
        average_checkpoints(empty, last=1)


def test_cli_average_then_evaluate_the_averaged_model(checkpointed_run, tmp_path, capsys):
    path, _ = checkpointed_run
    main(["average", path, "--epochs", "2,3", "-o", "avg.keras"])
    assert "averaged epochs [2, 3]" in capsys.readouterr().out
    (tmp_path / "src").write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    (tmp_path / "ref").write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    main(["evaluate", path, "--model-file", "avg.keras", "--length-penalty", "0.6",
          "--source", str(tmp_path / "src"), "--reference", str(tmp_path / "ref"),
          "--beam-size", "2"])
    assert capsys.readouterr().out.startswith("BLEU ")
    with pytest.raises(SystemExit):
        main(["average", path, "--epochs", "2,three"])
    assert "comma-separated epoch numbers" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["translate", path, "--model-file", "nothing.keras"])
    err = capsys.readouterr().err
    assert err.startswith("keras-rnmt translate: error: ") and "nothing.keras" in err
    with pytest.raises(FileNotFoundError, match="nothing.keras"):
        main(["translate", path, "--model-file", "nothing.keras", "--traceback"])
