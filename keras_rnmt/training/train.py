"""`train_and_evaluate(config, run_dir)`: data, tokenizers, model, `model.fit`, test BLEU.

Everything a run produces lands in `run_dir`: `config.json`, the two tokenizers, the data
filtering report, `log.csv`, TensorBoard logs, `backup/` (resume after a kill), the best
model `best.keras`, `trained.json` (training has ended) and `results.json`.
"""

import json
import os
import time

import keras

from keras_rnmt.evaluation import corpus_scores
from keras_rnmt.matmul_precision import set_matmul_precision
from keras_rnmt.models import build_model
from keras_rnmt.precision import warn_if_emulated
from keras_rnmt.training.callbacks import BleuCallback
from keras_rnmt.training.checkpoints import EpochCheckpoints
from keras_rnmt.training.config import jit_compile_arg
from keras_rnmt.training.distribution import distribution_scope
from keras_rnmt.training.heatmap_callback import AttentionHeatmapCallback
from keras_rnmt.training.losses import MaskedAccuracy, MaskedCrossEntropy
from keras_rnmt.training.optimizers import get_optimizer, plateau_decay, uniform_initialize
from keras_rnmt.training.programs import release_compiled_programs
from keras_rnmt.training.resume import DataEpoch, RandomStateBackup
from keras_rnmt.training.run_log import (
    EpochTimer,
    log_path,
    logged_epochs,
    logged_training_seconds,
)
from keras_rnmt.translator import Translator


def load_splits(config):
    """{"train", "val", "test"} -> (sources, targets) for the configured dataset."""
    from keras_rnmt import datasets

    if config.dataset == "toy":
        return datasets.toy_splits(seed=config.seed, train_size=config.toy_examples)
    return {
        split: datasets.multi30k(split, config.source_lang, config.target_lang,
                                 variant=config.variant, data_dir=config.data_dir or None)
        for split in ("train", "val", "test")
    }


def prepare_data(config, run_dir=None):
    """Splits, filtered training pairs, tokenizers built on the training side only."""
    from keras_rnmt.data import build_tokenizer, filter_pairs

    splits = load_splits(config)
    train_sources, train_targets, report = filter_pairs(*splits["train"],
                                                        max_length=config.max_length)
    print(f"training data: {report}")
    options = {}
    if config.tokenizer == "word":
        options = dict(lowercase=config.lowercase, split_punctuation=config.split_punctuation,
                       min_frequency=config.min_frequency, max_size=config.max_vocabulary or None)
    else:
        options = dict(vocabulary_size=config.max_vocabulary or 8000)
    source_tokenizer = build_tokenizer(config.tokenizer, train_sources, **options)
    target_tokenizer = build_tokenizer(config.tokenizer, train_targets, **options)
    if run_dir:
        source_tokenizer.save(os.path.join(run_dir, "source_tokenizer.json"))
        target_tokenizer.save(os.path.join(run_dir, "target_tokenizer.json"))
        with open(os.path.join(run_dir, "data_report.json"), "w") as f:
            json.dump({"kept": report.kept, "dropped_empty": report.dropped_empty,
                       "dropped_too_long": report.dropped_too_long}, f)
    splits["train"] = (train_sources, train_targets)
    return splits, source_tokenizer, target_tokenizer


def references_tokenized(config):
    """Whether the references are already tokenised (the toy pair, Multi30k's `tok` files):
    BLEU then scores them as they are."""
    return config.dataset == "toy" or config.variant == "tok"


def initialize_from_run(model, init_dir, source_tokenizer, target_tokenizer):
    """Load the weights of `init_dir/best.keras` into `model` (continued training).

    The earlier run must have the same architecture and the same vocabularies (its saved
    tokenizers are compared with this run's, word for word): otherwise the embedding rows
    would silently mean other words. Only weights are taken; the optimizer starts afresh
    with this run's settings (e.g. a lower learning rate).
    """
    from keras_rnmt.data import load_tokenizer

    weights = os.path.join(init_dir, "best.keras")
    if not os.path.exists(weights):
        raise FileNotFoundError(f"init_from: no best.keras in {init_dir!r}")
    for side, tokenizer in (("source", source_tokenizer), ("target", target_tokenizer)):
        path = os.path.join(init_dir, f"{side}_tokenizer.json")
        earlier = load_tokenizer(path).get_vocabulary()
        if earlier != tokenizer.get_vocabulary():
            raise ValueError(
                f"init_from: the {side} vocabulary of {path} ({len(earlier)} entries) differs "
                f"from this run's ({tokenizer.vocabulary_size()}); train on the same data with "
                "the same tokenizer settings"
            )
    model.load_weights(weights)
    print(f"initialised from {weights}")


def train_and_evaluate(config, run_dir):
    """Train the model `config` describes and evaluate it on the test split.

    A run killed during training resumes from `backup/`. Once training has ended, Keras
    deletes `backup/` and `trained.json` records the training; a run killed after that
    (during its test decoding) is started again without training: its `best.keras` is
    tested.

    Args:
        config: a `TrainConfig`.
        run_dir: the run directory (created; an existing one resumes from its backup).

    Returns:
        dict of results (test BLEU, chrF, signatures, training time, steps).
    """
    set_matmul_precision(config.matmul_precision)  # a ValueError outside JAX, before any file
    os.makedirs(run_dir, exist_ok=True)
    with open(os.path.join(run_dir, "config.json"), "w") as f:
        f.write(config.to_json())
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(config.dtype_policy)
    warn_if_emulated(config.dtype_policy)

    splits, source_tokenizer, target_tokenizer = prepare_data(config, run_dir)
    trained_path = os.path.join(run_dir, "trained.json")
    if os.path.exists(trained_path):
        with open(trained_path) as f:
            trained = json.load(f)
        print(f"training already ended ({trained_path}): testing best.keras")
    else:
        trained = fit(config, run_dir, splits, source_tokenizer, target_tokenizer)
        with open(trained_path, "w") as f:
            json.dump(trained, f, indent=2)
        # The test search compiles programs of its own; under JAX, the training's would
        # otherwise stay mapped and can push the process past Linux's mapping limit.
        release_compiled_programs()

    best = keras.saving.load_model(os.path.join(run_dir, "best.keras"))
    translator = Translator(best, source_tokenizer, target_tokenizer,
                            beam_size=config.beam_size, length_penalty=config.length_penalty)
    test_sources, test_targets = splits["test"]
    hypotheses = translator(test_sources)
    scores = corpus_scores(hypotheses, test_targets, tokenized=references_tokenized(config))
    print(f"test BLEU (beam {config.beam_size}): {scores}")
    results = {
        "test_bleu": scores.bleu, "bleu_signature": scores.bleu_signature,
        "test_chrf": scores.chrf, "chrf_signature": scores.chrf_signature,
        "beam_size": config.beam_size, **trained,
        "backend": keras.backend.backend(), "parameters": best.count_params(),
    }
    with open(os.path.join(run_dir, "results.json"), "w") as f:
        json.dump(results, f, indent=2)
    with open(os.path.join(run_dir, "test_hypotheses.txt"), "w", encoding="utf-8") as f:
        f.writelines(h + "\n" for h in hypotheses)
    return results


def training_datasets(config, splits, source_tokenizer, target_tokenizer, num_replicas=1,
                      epoch=None):
    """The training and validation datasets `fit` trains on (`make_dataset`).

    Both pad to their bucket's bound (one static shape per bucket). The training batches
    merge the buckets' leftovers into batches of nearby lengths only with
    `merge_remainders` (off by default: each bucket keeps its own leftovers). The validation
    batches always do: they only compute `val_loss`, so merging changes no update and saves
    compiled programs (on Multi30k at width 1: 14 validation shapes instead of 37, about
    5,300 fewer memory mappings for recurrent k=5 under JAX), and `val_loss` no longer
    depends on how the training batches are made. Data-parallel training splits every batch
    evenly over the `num_replicas` devices: each bucket's last, incomplete batch is filled
    up with all-<pad>-target copies, which add nothing to the loss (nothing is dropped);
    token batches hold a multiple of the device count.

    Returns:
        `(train, valid)`: `tf.data.Dataset`s of `((source_ids, target_in), target_out)`.
    """
    from keras_rnmt.data import make_dataset

    common = dict(batch_size=config.batch_size, batch_by=config.batch_by,
                  bucket_width=config.bucket_width, pad_to_bucket=True,
                  batch_multiple=num_replicas)
    train = make_dataset(*splits["train"], source_tokenizer, target_tokenizer, shuffle=True,
                         merge_remainders=config.merge_remainders,
                         seed=config.seed, shuffle_batches=config.shuffle_batches,
                         repeat=bool(config.steps_per_epoch),
                         epoch=epoch if config.seed_by_epoch else None,
                         steps_per_epoch=config.steps_per_epoch or None, **common)
    valid = make_dataset(*splits["val"], source_tokenizer, target_tokenizer, shuffle=False,
                         merge_remainders=True, **common)
    return train, valid


def fit(config, run_dir, splits, source_tokenizer, target_tokenizer):
    """`model.fit` with the run's callbacks, resuming from `run_dir/backup/` when present.

    Returns:
        dict: `epochs_run` and `training_seconds` (every epoch of the run, before a restart
        too), `epochs_this_process`, `training_seconds_this_process` and `replicas`.
    """
    from keras_rnmt.data import with_batch_count

    best_path = os.path.join(run_dir, "best.keras")
    val_sources, val_targets = splits["val"]
    if config.validation_sentences:
        val_sources = val_sources[:config.validation_sentences]
        val_targets = val_targets[:config.validation_sentences]
    tokenized = references_tokenized(config)
    callbacks = []
    # A token budget is no sentence count: then validation decodes 64 sentences a batch.
    sentences_per_batch = config.batch_size if config.batch_by == "sentences" else None
    if config.validation_bleu:
        callbacks.append(BleuCallback(
            lambda m: Translator(m, source_tokenizer, target_tokenizer, beam_size=1,
                                 batch_size=sentences_per_batch or 64),
            val_sources, val_targets, best_path, tokenized=tokenized, patience=config.patience))
    else:
        callbacks.append(keras.callbacks.ModelCheckpoint(best_path, monitor="val_loss",
                                                         save_best_only=True))
    if config.lr_decay:  # after BleuCallback, which logs the val_bleu it monitors
        callbacks.append(plateau_decay(config.lr_decay, config.lr_patience,
                                       validation_bleu=config.validation_bleu,
                                       best_path=best_path))
    if config.heatmap_sentences:
        callbacks.append(AttentionHeatmapCallback(
            lambda m: Translator(m, source_tokenizer, target_tokenizer, beam_size=1),
            val_sources[:config.heatmap_sentences], os.path.join(run_dir, "heatmaps")))
    if config.keep_checkpoints:
        callbacks.append(EpochCheckpoints(run_dir, config.keep_checkpoints))
    data_epoch = DataEpoch()
    callbacks += [
        data_epoch,
        EpochTimer(run_dir),  # after the validation BLEU it times, before the CSVLogger
        keras.callbacks.CSVLogger(log_path(run_dir), append=True),
        keras.callbacks.TensorBoard(os.path.join(run_dir, "tensorboard")),
        RandomStateBackup(os.path.join(run_dir, "backup"),
                          iterator_persists=bool(config.steps_per_epoch)),
        keras.callbacks.BackupAndRestore(os.path.join(run_dir, "backup")),
    ]
    model_config = config.model.replace(source_vocab_size=source_tokenizer.vocabulary_size(),
                                        target_vocab_size=target_tokenizer.vocabulary_size())
    # The model's variables must be created under the distribution (replicated per device).
    with distribution_scope(config.distribute, batch_size=sentences_per_batch) as replicas:
        train, valid = training_datasets(config, splits, source_tokenizer, target_tokenizer,
                                         replicas.num_replicas, epoch=data_epoch.variable)
        model = build_model(model_config)
        if config.uniform_init:
            uniform_initialize(model, config.uniform_init, seed=config.seed)
        if config.init_from:
            initialize_from_run(model, config.init_from, source_tokenizer, target_tokenizer)
        # Whole passes declare their batch count (without it, Keras warns after every epoch
        # that the data "ran out"); a repeated stream has `steps_per_epoch`.
        if config.steps_per_epoch:
            steps = config.steps_per_epoch
        else:
            train, steps = with_batch_count(train)
        valid, _ = with_batch_count(valid)
        optimizer = get_optimizer(config.optimizer, config.learning_rate or None,
                                  config.clipnorm or None, steps_per_epoch=steps,
                                  warmup_steps=config.warmup_steps)
        model.compile(optimizer=optimizer, loss=MaskedCrossEntropy(config.label_smoothing),
                      metrics=[MaskedAccuracy()], jit_compile=jit_compile_arg(config.jit_compile))
        model.summary(print_fn=lambda line, **_: print(line))
        start = time.time()
        # `make_dataset` shuffles; Keras ignores `shuffle` for a tf.data dataset but warns on
        # every fit when it is left at its default, True.
        history = model.fit(train, validation_data=valid, epochs=config.epochs,
                            steps_per_epoch=config.steps_per_epoch or None,
                            callbacks=callbacks, shuffle=False)
    process_seconds = time.time() - start
    # Every epoch of the run, before a restart too (`backup/`), when log.csv times them.
    training_seconds = logged_training_seconds(run_dir)
    if training_seconds is None:
        training_seconds = process_seconds
    return {
        "training_seconds": round(training_seconds, 1),
        "epochs_run": history.epoch[-1] + 1 if history.epoch else logged_epochs(run_dir),
        "epochs_this_process": len(history.epoch),
        "training_seconds_this_process": round(process_seconds, 1),
        "replicas": replicas.num_replicas,
    }

