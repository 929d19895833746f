"""Validation BLEU each epoch, with best-model saving and early stopping."""

import json
import os

import keras

from keras_rnmt.evaluation import corpus_scores


class BleuCallback(keras.callbacks.Callback):
    """Greedy-decode the validation set after each epoch and score it with sacreBLEU.

    Logs `val_bleu`; saves the model to `best_path` when BLEU improves (and its epoch and
    BLEU to `best_record_path(best_path)`); stops training after `patience` epochs without
    improvement. A run that `keras.callbacks.BackupAndRestore` resumes at a later epoch
    takes its best BLEU and the epochs since it from that record, so a worse epoch after a
    restart does not replace the best model and early stopping counts on.

    Args:
        translator_factory: callable(model) -> `Translator` (greedy, beam 1).
        sources, references: validation strings.
        best_path: where the best `.keras` model is written.
        tokenized: whether references are tokenised text (BLEU with tokenize="none").
        patience: int. Epochs without improvement before stopping; 0 disables.
    """

    def __init__(self, translator_factory, sources, references, best_path, tokenized=True,
                 patience=3):
        super().__init__()
        self.translator_factory = translator_factory
        self.sources = list(sources)
        self.references = list(references)
        self.best_path = best_path
        self.tokenized = tokenized
        self.patience = patience
        self.best = -1.0
        self.wait = 0
        self.history = []
        self._resumed = False

    def on_train_begin(self, logs=None):
        self._resumed = False

    def on_epoch_begin(self, epoch, logs=None):
        if self._resumed:
            return
        self._resumed = True
        record = resumed_best(self.best_path, epoch)
        if record is not None:
            self.best, self.wait = record["val_bleu"], epoch - record["epoch"]

    def on_epoch_end(self, epoch, logs=None):
        hypotheses = epoch_translator(self)(self.sources)
        scores = corpus_scores(hypotheses, self.references, tokenized=self.tokenized)
        self.history.append(scores.bleu)
        if logs is not None:
            logs["val_bleu"] = scores.bleu
        print(f"\nepoch {epoch + 1}: validation BLEU {scores.bleu:.2f} (greedy, "
              f"{len(self.sources)} sentences)")
        if scores.bleu > self.best:
            self.best, self.wait = scores.bleu, 0
            self.model.save(self.best_path)
            with open(best_record_path(self.best_path), "w") as f:
                json.dump({"epoch": epoch + 1, "val_bleu": scores.bleu}, f)
        else:
            self.wait += 1
            if self.patience and self.wait >= self.patience:
                print(f"early stopping: no BLEU improvement for {self.wait} epochs")
                self.model.stop_training = True


def epoch_translator(callback):
    """`callback.translator_factory(callback.model)`, made once and reused every epoch.

    The translator's compiled search reads the model's current weights at every call
    (`keras_rnmt.search.compiled.compile_search`), so a new one per epoch would only compile the
    same search again: under JAX, half of a Multi30k validation pass (about 5 of 10 s here).
    """
    cached = getattr(callback, "_epoch_translator", None)
    if cached is None or cached[0] is not callback.model:
        cached = callback._epoch_translator = (callback.model,
                                               callback.translator_factory(callback.model))
    return cached[1]


def best_record_path(best_path):
    """Where `BleuCallback` records the epoch (1-based) and BLEU of `best_path`'s model."""
    return os.path.splitext(best_path)[0] + ".json"


def resumed_best(best_path, epoch):
    """The best-model record ``{"epoch", "val_bleu"}`` when training starts at ``epoch`` > 0.

    Returns None for a fresh start (``epoch`` 0), when there is no record, or when the
    record is from a later epoch than ``epoch`` (left by another run in the directory).
    """
    path = best_record_path(best_path)
    if epoch == 0 or not os.path.exists(path):
        return None
    with open(path) as f:
        record = json.load(f)
    return record if 0 < record["epoch"] <= epoch else None
