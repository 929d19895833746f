"""`train_and_evaluate` killed and started again: at an epoch's start, after its last epoch,
during its test decoding. The run goes on as if it had never stopped."""

import csv
import json
import os

import numpy as np
import pytest
from toy_runs import halved_rates, toy_config

from keras_rnmt.models import ModelConfig
from keras_rnmt.training import train
from keras_rnmt.training.checkpoints import list_checkpoints


class Killed(Exception):
    pass


class KilledAtEpoch2(train.BleuCallback):
    """`BleuCallback` that kills the run at the start of its third epoch (after the second
    epoch's backup)."""

    def on_epoch_begin(self, epoch, logs=None):
        if epoch == 2:
            raise Killed
        super().on_epoch_begin(epoch, logs)


@pytest.mark.heavy
def test_a_killed_run_resumes_with_its_best_model_and_rate(tmp_path, small_splits, monkeypatch):
    """Kill a run at the start of its third epoch, start it again: it resumes from
    `backup/`, and the best model, its record, the logged rates and the kept epoch
    checkpoints are those of a run that never stopped (every epoch's BLEU logged once)."""

    config = toy_config(epochs=4, lr_decay=0.5, lr_patience=0, keep_checkpoints=2)
    monkeypatch.setattr(train, "BleuCallback", KilledAtEpoch2)
    with pytest.raises(Killed):
        train.train_and_evaluate(config, str(tmp_path))
    assert (tmp_path / "backup").exists()
    monkeypatch.setattr(train, "BleuCallback", KilledAtEpoch2.__base__)  # small_splits stays
    results = train.train_and_evaluate(config, str(tmp_path))
    assert (results["epochs_run"], results["epochs_this_process"]) == (4, 2)
    with open(tmp_path / "log.csv") as f:
        rows = list(csv.DictReader(f))
    assert [int(row["epoch"]) for row in rows] == [0, 1, 2, 3]
    bleus = [float(row["val_bleu"]) for row in rows]
    with open(tmp_path / "best.json") as f:
        record = json.load(f)
    assert record["epoch"] == int(np.argmax(bleus)) + 1  # the first epoch with the top BLEU
    assert [float(row["learning_rate"]) for row in rows] == pytest.approx(
        halved_rates(bleus, 1e-2), rel=1e-6)
    assert [epoch for epoch, _ in list_checkpoints(str(tmp_path))] == [3, 4]
    # The run's training time counts the epochs of the killed process too.
    seconds = [float(row["epoch_seconds"]) for row in rows]
    assert all(s > 0 for s in seconds)
    assert results["training_seconds"] == pytest.approx(sum(seconds), abs=0.1)
    assert results["training_seconds"] > sum(seconds[2:])
    with pytest.raises(ValueError, match="keep_checkpoints must be >= 0"):
        toy_config(keep_checkpoints=-1)


def _epoch_weights(run_dir, epoch):
    """The weights `EpochCheckpoints` kept for `epoch`, as `{path in the file: array}`."""
    import h5py

    arrays = {}
    with h5py.File(os.path.join(run_dir, "checkpoints", f"epoch-{epoch:03d}.weights.h5")) as f:
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
    return arrays


@pytest.mark.heavy
@pytest.mark.parametrize("steps_per_epoch", [
    0,  # whole passes
    # A repeated stream: what it adds is the driver handing the epoch to the tf.data
    # pipeline, the same under every backend, so it runs in the torch pass, where the run
    # costs 9 s (36 s under TensorFlow, 18 s under JAX); the restored random state and
    # optimizer, which are the backend's, are checked with whole passes in every pass.
    pytest.param(5, marks=pytest.mark.backends("torch")),
])
def test_a_killed_run_trains_on_as_if_it_had_never_stopped(tmp_path, small_splits, monkeypatch,
                                                           steps_per_epoch):
    """With dropout and shuffled batches: killed at the start of its last epoch and started
    again, a run logs the losses and ends with the weights of a run that never stopped
    (`keras_rnmt.training.resume`: the data epoch and dropout's random state)."""

    model = ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot",
                        dropout=0.3)
    config = toy_config(epochs=3, steps_per_epoch=steps_per_epoch, model=model,
                         keep_checkpoints=1)
    train.train_and_evaluate(config, str(tmp_path / "straight"))
    monkeypatch.setattr(train, "BleuCallback", KilledAtEpoch2)
    with pytest.raises(Killed):
        train.train_and_evaluate(config, str(tmp_path / "resumed"))
    assert sorted(os.listdir(tmp_path / "resumed" / "backup")) == [
        "latest.weights.h5", "random_state-1.npz", "random_state-2.npz",
        "training_metadata.json"]
    monkeypatch.setattr(train, "BleuCallback", KilledAtEpoch2.__base__)  # small_splits stays
    results = train.train_and_evaluate(config, str(tmp_path / "resumed"))
    assert results["epochs_this_process"] == 1

    def losses(name):
        with open(tmp_path / name / "log.csv") as f:
            return [float(row["loss"]) for row in csv.DictReader(f)]

    straight, resumed = losses("straight"), losses("resumed")
    assert len(straight) == 3 and len(set(straight)) == 3
    np.testing.assert_allclose(resumed, straight, rtol=1e-6)
    want, got = _epoch_weights(tmp_path / "straight", 3), _epoch_weights(tmp_path / "resumed", 3)
    assert sorted(got) == sorted(want)
    for name in want:
        np.testing.assert_allclose(got[name], want[name], rtol=1e-6, atol=1e-7, err_msg=name)


def test_a_run_killed_after_its_last_epoch_counts_the_logged_epochs(tmp_path, small_splits,
                                                                    monkeypatch):
    """Killed after the last epoch's backup, before the test decode: started again, it trains
    no epoch itself and reports the epochs in its log."""

    class KilledAtTheEnd(train.BleuCallback):
        def on_train_end(self, logs=None):
            raise Killed  # before `BackupAndRestore` deletes `backup/`

    config = toy_config(epochs=2)
    monkeypatch.setattr(train, "BleuCallback", KilledAtTheEnd)
    with pytest.raises(Killed):
        train.train_and_evaluate(config, str(tmp_path))
    monkeypatch.setattr(train, "BleuCallback", KilledAtTheEnd.__base__)  # small_splits stays
    results = train.train_and_evaluate(config, str(tmp_path))
    assert (results["epochs_run"], results["epochs_this_process"]) == (2, 0)
    with open(tmp_path / "log.csv") as f:
        logged = sum(float(row["epoch_seconds"]) for row in csv.DictReader(f))
    assert results["training_seconds"] == pytest.approx(logged, abs=0.1) and logged > 0


def test_a_run_killed_during_its_test_decoding_is_tested_not_trained_again(
        tmp_path, small_splits, monkeypatch):
    """Killed after training ended (Keras has deleted `backup/`), before `results.json`:
    started again, it trains nothing, logs no epoch twice and tests the same `best.keras`."""

    def killed(*args, **kwargs):
        raise Killed

    config = toy_config(epochs=2)
    corpus_scores = train.corpus_scores
    monkeypatch.setattr(train, "corpus_scores", killed)
    with pytest.raises(Killed):
        train.train_and_evaluate(config, str(tmp_path))
    assert not (tmp_path / "backup").exists() and not (tmp_path / "results.json").exists()
    log = (tmp_path / "log.csv").read_text()
    best = (tmp_path / "best.keras").read_bytes()
    with open(tmp_path / "trained.json") as f:
        trained = json.load(f)
    assert (trained["epochs_run"], trained["epochs_this_process"]) == (2, 2)

    monkeypatch.setattr(train, "corpus_scores", corpus_scores)
    monkeypatch.setattr(train, "fit", killed)  # training again would raise
    results = train.train_and_evaluate(config, str(tmp_path))
    assert (tmp_path / "log.csv").read_text() == log
    assert (tmp_path / "best.keras").read_bytes() == best
    assert {key: results[key] for key in trained} == trained
    assert 0 <= results["test_bleu"] <= 100
    assert len((tmp_path / "test_hypotheses.txt").read_text().splitlines()) == 32
