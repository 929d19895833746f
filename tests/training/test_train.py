"""`train_and_evaluate` end to end on the toy pair: the run directory and the plateau decay."""

import csv
import json
import os
import warnings

import numpy as np
import pytest
from toy_runs import halved_rates, toy_config

from keras_rnmt.training import train
from keras_rnmt.training.config import TrainConfig


@pytest.mark.heavy
def test_plateau_decay_run_logs_its_learning_rate(tmp_path, small_splits):
    config = toy_config(epochs=4, lr_decay=0.5, lr_patience=0)
    results = train.train_and_evaluate(config, str(tmp_path))
    assert results["epochs_run"] == 4
    with open(tmp_path / "log.csv") as f:
        rows = list(csv.DictReader(f))
    bleus = [float(row["val_bleu"]) for row in rows]
    rates = [float(row["learning_rate"]) for row in rows]
    # Epoch e's row holds the rate epoch e trained with; it is halved after every epoch
    # whose BLEU does not beat all earlier ones (patience 0), kept otherwise.
    assert rates == pytest.approx(halved_rates(bleus, 1e-2), rel=1e-6)
    with open(tmp_path / "config.json") as f:
        assert json.load(f)["lr_decay"] == 0.5
    assert os.path.exists(tmp_path / "best.keras")


@pytest.mark.heavy
def test_init_from_starts_from_the_earlier_runs_best_weights_and_checks_vocabularies(
        tmp_path, small_splits, monkeypatch):
    import keras

    first, second = tmp_path / "first", tmp_path / "second"
    train.train_and_evaluate(toy_config(), str(first))
    trained = keras.saving.load_model(first / "best.keras")
    loaded = {}
    initialize = train.initialize_from_run

    class Initialized(Exception):
        pass

    def spy(model, *args):  # the weights right after initialisation, before any step
        initialize(model, *args)
        loaded["weights"] = [np.array(w) for w in model.get_weights()]
        raise Initialized  # what follows is any run's training (8-10 s under TensorFlow)

    monkeypatch.setattr(train, "initialize_from_run", spy)
    with pytest.raises(Initialized):
        train.train_and_evaluate(toy_config(init_from=str(first), learning_rate=1e-3),
                                 str(second))
    monkeypatch.setattr(train, "initialize_from_run", initialize)
    for got, want in zip(loaded["weights"], trained.get_weights(), strict=True):
        np.testing.assert_array_equal(got, np.array(want))
    with open(second / "config.json") as f:
        assert json.load(f)["init_from"] == str(first)
    with pytest.raises(ValueError, match="source vocabulary .* differs from this run.s"):
        # min_frequency 1000 leaves only the special tokens: another vocabulary
        train.train_and_evaluate(toy_config(init_from=str(first), min_frequency=1000),
                                 str(tmp_path / "third"))


def test_init_from_needs_a_trained_run(tmp_path, small_splits):
    with pytest.raises(FileNotFoundError, match="no best.keras"):
        train.train_and_evaluate(toy_config(init_from=str(tmp_path / "missing")),
                                 str(tmp_path / "second"))




def test_training_under_a_policy_this_cpu_would_emulate_warns(tmp_path, monkeypatch):
    from keras_rnmt import precision

    class Reached(Exception):
        pass

    def prepare_data(config, run_dir):
        raise Reached

    monkeypatch.setattr(precision, "cpu_flags", lambda: {"avx2"})
    monkeypatch.setattr(precision, "accelerator_present", lambda: False)
    # A warning, not an error: the run goes on to its data (and trains, which
    # tests/models/test_training.py checks under mixed_bfloat16; a whole toy run here took
    # 23-29 s under TensorFlow and JAX).
    monkeypatch.setattr(train, "prepare_data", prepare_data)
    config = toy_config(dtype_policy="mixed_bfloat16")
    with pytest.warns(RuntimeWarning, match="without native bfloat16 matmuls"):
        with pytest.raises(Reached):
            train.train_and_evaluate(config, str(tmp_path))


def test_bfloat16_matmuls_train_under_jax_and_torch_and_are_refused_before_any_file_else(
        tmp_path, small_splits):
    import keras

    config = toy_config(matmul_precision="bfloat16")
    if keras.backend.backend() not in ("jax", "torch"):
        with pytest.raises(ValueError, match="implemented under JAX and PyTorch only"):
            train.train_and_evaluate(config, str(tmp_path / "run"))
        assert not os.path.exists(tmp_path / "run")
        return
    results = train.train_and_evaluate(config, str(tmp_path / "run"))
    assert results["epochs_run"] == 1
    with open(tmp_path / "run" / "log.csv") as f:
        assert np.isfinite(float(next(csv.DictReader(f))["loss"]))
    with open(tmp_path / "run" / "config.json") as f:
        assert json.load(f)["matmul_precision"] == "bfloat16"


# The driver's arguments and Keras' data-adapter warning, the same under every backend: in the
# torch pass, where the run takes 3 s (13-24 s under TensorFlow and JAX).
@pytest.mark.backends("torch")
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
        train.train_and_evaluate(toy_config(jit_compile="true"), str(tmp_path))
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
        train.train_and_evaluate(toy_config(steps_per_epoch=0, epochs=2), str(tmp_path))
    assert not [w for w in caught if "ran out of data" in str(w.message)]
    for name, dataset in seen.items():
        # The declared count is the batches a pass really has (else tf.data raises).
        assert int(dataset.cardinality()) == sum(1 for _ in dataset) >= 1, name
        assert int(dataset.cardinality()) != tf.data.UNKNOWN_CARDINALITY
    assert int(seen["train"].cardinality()) > 1


# The driver's batching (tf.data) and search batch size, the same under every backend: in the
# torch pass (3 s; 11-12 s under TensorFlow and JAX).
@pytest.mark.backends("torch")
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
    train.train_and_evaluate(toy_config(batch_by="tokens", batch_size=200), str(tmp_path))
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
    train.train_and_evaluate(toy_config(epochs=2), str(tmp_path))
    # The validation BLEU's translators are made in `fit`, before the release.
    assert events[-2:] == ["release", "test translator"]
    assert events.count("release") == 1
    if keras.backend.backend() == "jax":
        assert counts["after"] < counts["before"]


@pytest.mark.parametrize("shuffle_batches", [True, False])
def test_the_config_decides_whether_training_batches_are_shuffled_and_leftovers_merged(
        tmp_path, small_splits, monkeypatch, shuffle_batches):
    """`shuffle_batches`, `seed_by_epoch` and `merge_remainders` reach the training
    pipeline; validation batches keep their order and always merge their leftovers."""
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
        train.train_and_evaluate(toy_config(shuffle_batches=shuffle_batches,
                                             merge_remainders=shuffle_batches,
                                             seed_by_epoch=shuffle_batches), str(tmp_path))
    training, validation = calls
    assert (training["shuffle"], training["shuffle_batches"]) == (True, shuffle_batches)
    assert validation["shuffle"] is False
    # The training data's epoch is `model.fit`'s (`DataEpoch`), unless the config says not to.
    assert (training["epoch"] is not None) is shuffle_batches
    assert training["steps_per_epoch"] == 2  # `_toy_config`'s, for its repeated stream
    # Training merges the length buckets' leftovers when the config says so
    # (`merge_remainders`); validation always does: it changes no update, and compiles fewer
    # programs.
    assert training["merge_remainders"] is shuffle_batches
    assert validation["merge_remainders"] is True
    assert training["pad_to_bucket"] is validation["pad_to_bucket"] is True


@pytest.mark.parametrize("field, default", [("shuffle_batches", True),
                                            ("merge_remainders", False),
                                            ("seed_by_epoch", True)])
def test_pipeline_switches_default_and_read_from_the_command_line(field, default):
    # Merging is off: at width 1 it cost test BLEU (benchmarks/RESULTS.md §4).
    assert getattr(TrainConfig(), field) is default
    flag = field.replace("_", "-")
    value = str(not default).lower()
    assert getattr(TrainConfig().override({flag: value}), field) is (not default)
