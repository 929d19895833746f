"""`train_and_evaluate` end to end on the toy pair: the run directory and the plateau decay."""

import csv
import json
import os
import warnings

import numpy as np
import pytest

from keras_rnmt.models import ModelConfig
from keras_rnmt.training import train
from keras_rnmt.training.checkpoints import list_checkpoints
from keras_rnmt.training.config import TrainConfig


@pytest.fixture
def small_splits(monkeypatch):
    """Validation and test cut to 32 sentences (one batch) to keep decoding cheap."""
    load_splits = train.load_splits
    monkeypatch.setattr(train, "load_splits", lambda config: {
        name: (sources[:32], targets[:32]) if name != "train" else (sources, targets)
        for name, (sources, targets) in load_splits(config).items()})


@pytest.mark.heavy
def test_plateau_decay_run_logs_its_learning_rate(tmp_path, small_splits):
    config = TrainConfig(
        dataset="toy", toy_examples=256, min_frequency=1,
        model=ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot",
                          dropout=0.0),
        batch_size=32, epochs=4, steps_per_epoch=2, learning_rate=1e-2, lr_decay=0.5,
        lr_patience=0, patience=0, beam_size=1, heatmap_sentences=0)
    results = train.train_and_evaluate(config, str(tmp_path))
    assert results["epochs_run"] == 4
    with open(tmp_path / "log.csv") as f:
        rows = list(csv.DictReader(f))
    bleus = [float(row["val_bleu"]) for row in rows]
    rates = [float(row["learning_rate"]) for row in rows]
    # Epoch e's row holds the rate epoch e trained with; it is halved after every epoch
    # whose BLEU does not beat all earlier ones (patience 0), kept otherwise.
    assert rates == pytest.approx(_halved_rates(bleus, 1e-2), rel=1e-6)
    with open(tmp_path / "config.json") as f:
        assert json.load(f)["lr_decay"] == 0.5
    assert os.path.exists(tmp_path / "best.keras")


def _halved_rates(bleus, rate):
    """The rate of every epoch with patience 0: halved after each epoch whose BLEU does not
    beat all earlier ones."""
    expected, best = [], float("-inf")
    for bleu in bleus:
        expected.append(rate)
        if bleu > best:
            best = bleu
        else:
            rate /= 2
    return expected


def _toy_config(**overrides):
    values = dict(
        dataset="toy", toy_examples=256, min_frequency=1,
        model=ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot",
                          dropout=0.0),
        batch_size=32, epochs=1, steps_per_epoch=2, learning_rate=1e-2, patience=0,
        beam_size=1, heatmap_sentences=0)
    return TrainConfig(**{**values, **overrides})


@pytest.mark.heavy
def test_init_from_starts_from_the_earlier_runs_best_weights_and_checks_vocabularies(
        tmp_path, small_splits, monkeypatch):
    import keras
    import numpy as np

    first, second = tmp_path / "first", tmp_path / "second"
    train.train_and_evaluate(_toy_config(), str(first))
    trained = keras.saving.load_model(first / "best.keras")
    loaded = {}
    initialize = train.initialize_from_run

    def spy(model, *args):  # the weights right after initialisation, before any step
        initialize(model, *args)
        loaded["weights"] = [np.array(w) for w in model.get_weights()]

    monkeypatch.setattr(train, "initialize_from_run", spy)
    train.train_and_evaluate(_toy_config(init_from=str(first), learning_rate=1e-3),
                             str(second))
    for got, want in zip(loaded["weights"], trained.get_weights(), strict=True):
        np.testing.assert_array_equal(got, np.array(want))
    with open(second / "config.json") as f:
        assert json.load(f)["init_from"] == str(first)
    with pytest.raises(ValueError, match="source vocabulary .* differs from this run.s"):
        # min_frequency 1000 leaves only the special tokens: another vocabulary
        train.train_and_evaluate(_toy_config(init_from=str(first), min_frequency=1000),
                                 str(tmp_path / "third"))


def test_init_from_needs_a_trained_run(tmp_path, small_splits):
    with pytest.raises(FileNotFoundError, match="no best.keras"):
        train.train_and_evaluate(_toy_config(init_from=str(tmp_path / "missing")),
                                 str(tmp_path / "second"))


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

    config = _toy_config(epochs=4, lr_decay=0.5, lr_patience=0, keep_checkpoints=2)
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
        _halved_rates(bleus, 1e-2), rel=1e-6)
    assert [epoch for epoch, _ in list_checkpoints(str(tmp_path))] == [3, 4]
    # The run's training time counts the epochs of the killed process too.
    seconds = [float(row["epoch_seconds"]) for row in rows]
    assert all(s > 0 for s in seconds)
    assert results["training_seconds"] == pytest.approx(sum(seconds), abs=0.1)
    assert results["training_seconds"] > sum(seconds[2:])
    with pytest.raises(ValueError, match="keep_checkpoints must be >= 0"):
        _toy_config(keep_checkpoints=-1)


def _epoch_weights(run_dir, epoch):
    """The weights `EpochCheckpoints` kept for `epoch`, as `{path in the file: array}`."""
    import h5py

    arrays = {}
    with h5py.File(os.path.join(run_dir, "checkpoints", f"epoch-{epoch:03d}.weights.h5")) as f:
        f.visititems(lambda name, item: arrays.__setitem__(name, item[()])
                     if isinstance(item, h5py.Dataset) else None)
    return arrays


@pytest.mark.heavy
@pytest.mark.parametrize("steps_per_epoch", [0, 5])  # whole passes; a repeated stream
def test_a_killed_run_trains_on_as_if_it_had_never_stopped(tmp_path, small_splits, monkeypatch,
                                                           steps_per_epoch):
    """With dropout and shuffled batches: killed at the start of its last epoch and started
    again, a run logs the losses and ends with the weights of a run that never stopped
    (`keras_rnmt.training.resume`: the data epoch and dropout's random state)."""

    model = ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot",
                        dropout=0.3)
    config = _toy_config(epochs=3, steps_per_epoch=steps_per_epoch, model=model,
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

    config = _toy_config(epochs=2)
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

    config = _toy_config(epochs=2)
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


def test_training_under_a_policy_this_cpu_would_emulate_warns(tmp_path, small_splits,
                                                             monkeypatch):
    from keras_rnmt import precision

    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2"})
    monkeypatch.setattr(precision, "accelerator_present", lambda: False)
    config = TrainConfig(
        dataset="toy", toy_examples=64, min_frequency=1, dtype_policy="mixed_bfloat16",
        model=ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot"),
        batch_size=32, epochs=1, steps_per_epoch=1, beam_size=1, heatmap_sentences=0)
    with pytest.warns(RuntimeWarning, match="without native bfloat16 matmuls"):
        results = train.train_and_evaluate(config, str(tmp_path))
    assert results["epochs_run"] == 1


@pytest.mark.heavy
def test_the_run_passes_jit_compile_to_compile_and_leaves_shuffling_to_the_pipeline(
        tmp_path, small_splits, monkeypatch):
    import keras

    seen, compile_model = [], keras.Model.compile

    def spy(model, *args, jit_compile="auto", **kwargs):
        seen.append(jit_compile)
        # Train without XLA / torch.compile here: what is tested is the argument passed.
        return compile_model(model, *args, jit_compile=False, **kwargs)

    monkeypatch.setattr(keras.Model, "compile", spy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train.train_and_evaluate(_toy_config(jit_compile="true"), str(tmp_path))
    # The run compiles with it (the default, "auto", would reach compile as "auto"); then
    # loading `best.keras` for the test set compiles from its saved config (False, above).
    assert seen[0] is True and seen[1:] == [False]
    # The pipeline shuffles; Keras' "shuffle=True ... will be ignored" warning stays away.
    assert not [w for w in caught if "shuffle" in str(w.message)]


def test_whole_passes_declare_their_batch_count_so_fit_does_not_warn_they_ran_out(
        tmp_path, small_splits, monkeypatch):
    """`model.fit` over a bucketed pipeline of unknown length warned after every training
    and every validation epoch that the input "ran out of data; interrupting training";
    with the batch count declared, it knows each epoch's length and does not."""
    import keras
    import tensorflow as tf

    seen, fit = {}, keras.Model.fit

    def spy(model, x, validation_data=None, **kwargs):
        seen.update(train=x, valid=validation_data)
        return fit(model, x, validation_data=validation_data, **kwargs)

    monkeypatch.setattr(keras.Model, "fit", spy)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        train.train_and_evaluate(_toy_config(steps_per_epoch=0, epochs=2), str(tmp_path))
    assert not [w for w in caught if "ran out of data" in str(w.message)]
    for name, dataset in seen.items():
        # The declared count is the batches a pass really has (else tf.data raises).
        assert int(dataset.cardinality()) == sum(1 for _ in dataset) >= 1, name
        assert int(dataset.cardinality()) != tf.data.UNKNOWN_CARDINALITY
    assert int(seen["train"].cardinality()) > 1


@pytest.mark.heavy
def test_a_token_budget_bounds_validation_batches_too(tmp_path, small_splits, monkeypatch):
    """With batch_by="tokens", validation batches keep the budget as training batches do, and
    validation decoding takes 64 sentences a batch, not the budget's 200."""
    import keras_rnmt.data

    datasets, batch_sizes = [], []
    make_dataset, translator = keras_rnmt.data.make_dataset, train.Translator

    def spy_dataset(*args, **kwargs):
        datasets.append(make_dataset(*args, **kwargs))
        return datasets[-1]

    def spy_translator(*args, **kwargs):
        batch_sizes.append(kwargs.get("batch_size"))
        return translator(*args, **kwargs)

    monkeypatch.setattr(keras_rnmt.data, "make_dataset", spy_dataset)  # fit imports it late
    monkeypatch.setattr(train, "Translator", spy_translator)
    train.train_and_evaluate(_toy_config(batch_by="tokens", batch_size=200), str(tmp_path))
    assert len(datasets) == 2  # training, validation
    for dataset in datasets:
        for (source, target_in), _ in dataset.take(20):
            assert source.shape[0] * max(source.shape[1], target_in.shape[1]) <= 200
    assert batch_sizes[0] == 64 and 200 not in batch_sizes


def test_the_run_releases_the_training_programs_before_its_test_decoding(
        tmp_path, small_splits, monkeypatch):
    """Under JAX the training's compiled programs hold memory mappings (many per program);
    the test search compiles more, so they are released once training has ended."""
    import keras

    from keras_rnmt.training import programs

    events, counts = [], {}

    def release():
        events.append("release")
        assert (tmp_path / "trained.json").exists()  # training has ended
        counts["before"] = programs.memory_mappings()
        counts["after"] = programs.release_compiled_programs()
        return counts["after"]

    translator = train.Translator

    def test_translator(*args, **kwargs):
        events.append("test translator")
        return translator(*args, **kwargs)

    monkeypatch.setattr(train, "release_compiled_programs", release)
    monkeypatch.setattr(train, "Translator", test_translator)
    train.train_and_evaluate(_toy_config(epochs=2), str(tmp_path))
    # The validation BLEU's translators are made in `fit`, before the release.
    assert events[-2:] == ["release", "test translator"]
    assert events.count("release") == 1
    if keras.backend.backend() == "jax":
        assert counts["after"] < counts["before"]


@pytest.mark.parametrize("shuffle_batches", [True, False])
def test_the_config_decides_whether_training_batches_are_shuffled_and_leftovers_merged(
        tmp_path, small_splits, monkeypatch, shuffle_batches):
    """`shuffle_batches` and `seed_by_epoch` reach the training pipeline; validation batches
    keep their order; `merge_remainders` reaches both."""
    import keras_rnmt.data

    calls = []

    class Stop(Exception):
        pass

    def spy_dataset(*args, **kwargs):
        calls.append(kwargs)
        if len(calls) == 2:  # training and validation datasets made: stop before the model
            raise Stop
        return None

    monkeypatch.setattr(keras_rnmt.data, "make_dataset", spy_dataset)
    with pytest.raises(Stop):
        train.train_and_evaluate(_toy_config(shuffle_batches=shuffle_batches,
                                             merge_remainders=shuffle_batches,
                                             seed_by_epoch=shuffle_batches), str(tmp_path))
    training, validation = calls
    assert (training["shuffle"], training["shuffle_batches"]) == (True, shuffle_batches)
    assert validation["shuffle"] is False
    # The training data's epoch is `model.fit`'s (`DataEpoch`), unless the config says not to.
    assert (training["epoch"] is not None) is shuffle_batches
    assert training["steps_per_epoch"] == 2  # `_toy_config`'s, for its repeated stream
    # Both merge the length buckets' leftovers (fewer batch shapes to compile), unless the
    # config says not to (`merge_remainders`).
    assert training["merge_remainders"] is validation["merge_remainders"] is shuffle_batches
    assert training["pad_to_bucket"] is validation["pad_to_bucket"] is True


def test_shuffle_batches_defaults_on_and_reads_from_the_command_line():
    assert TrainConfig().shuffle_batches is True
    assert TrainConfig().override({"shuffle-batches": "false"}).shuffle_batches is False


@pytest.mark.parametrize("field", ["merge_remainders", "seed_by_epoch"])
def test_pipeline_switches_default_on_and_read_from_the_command_line(field):
    assert getattr(TrainConfig(), field) is True
    flag = field.replace("_", "-")
    assert getattr(TrainConfig().override({flag: "false"}), field) is False
