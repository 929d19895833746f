"""What a run's `log.csv` records across restarts: its epochs and their wall time.

A run killed and started again (`keras.callbacks.BackupAndRestore`) appends to the same
`log.csv`, so the file, not the last process, knows how many epochs the run trained and how
long they took. `EpochTimer` adds an ``epoch_seconds`` column for the second.
"""

import csv
import os
import time

import keras

EPOCH_SECONDS = "epoch_seconds"


def log_path(run_dir):
    return os.path.join(run_dir, "log.csv")


def _rows(run_dir):
    path = log_path(run_dir)
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        return None, []
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        return reader.fieldnames, list(reader)


class EpochTimer(keras.callbacks.Callback):
    """Log each epoch's wall time as ``epoch_seconds`` (training, validation and the
    callbacks before this one, e.g. validation BLEU); place it before the `CSVLogger`.

    A `log.csv` started without the column (a run begun by an older version, now resumed)
    gets none, so its rows stay aligned with its header.
    """

    def __init__(self, run_dir):
        super().__init__()
        self.run_dir = run_dir
        self.enabled = True
        self._start = None

    def on_train_begin(self, logs=None):
        fields, _ = _rows(self.run_dir)
        self.enabled = fields is None or EPOCH_SECONDS in fields

    def on_epoch_begin(self, epoch, logs=None):
        self._start = time.perf_counter()

    def on_epoch_end(self, epoch, logs=None):
        if self.enabled and logs is not None and self._start is not None:
            logs[EPOCH_SECONDS] = time.perf_counter() - self._start


def logged_epochs(run_dir):
    """Epochs in `log.csv`, every process of the run together (0 without a log)."""
    return len(_rows(run_dir)[1])


def logged_training_seconds(run_dir):
    """Sum of `log.csv`'s ``epoch_seconds`` over every epoch of the run, or None when the
    log lacks the column (a run begun before `EpochTimer`) or has no epoch."""
    fields, rows = _rows(run_dir)
    if not rows or EPOCH_SECONDS not in fields:
        return None
    return sum(float(row[EPOCH_SECONDS]) for row in rows)
