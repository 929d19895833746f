"""Per-epoch weight checkpoints, and averaging the last few of them into one model.

Averaging the parameters of the last checkpoints of a run (Junczys-Dowmunt et al., 2016,
"The AMU-UEDIN submission to the WMT16 news translation task"; Vaswani et al., 2017, §6.1)
gives one model that often translates better than any single checkpoint, at no decoding
cost. JoeyNMT (`scripts/average_checkpoints.py`), fairseq and Marian ship the same tool.

    keras-rnmt train recipes/multi30k.py --keep-checkpoints 4 --run-dir runs/rec5
    keras-rnmt average runs/rec5 --last 3          # writes runs/rec5/averaged.keras
    keras-rnmt evaluate runs/rec5 --model-file averaged.keras --source ... --reference ...
"""

import os
import re

import keras
import numpy as np

CHECKPOINT_DIR = "checkpoints"
_PATTERN = re.compile(r"^epoch-(\d+)\.weights\.h5$")


def checkpoint_path(run_dir, epoch):
    """`run_dir/checkpoints/epoch-NNN.weights.h5` for 1-based `epoch`."""
    return os.path.join(run_dir, CHECKPOINT_DIR, f"epoch-{epoch:03d}.weights.h5")


def list_checkpoints(run_dir):
    """`[(epoch, path), ...]` of the run's epoch checkpoints, oldest first."""
    folder = os.path.join(run_dir, CHECKPOINT_DIR)
    if not os.path.isdir(folder):
        return []
    found = []
    for name in os.listdir(folder):
        match = _PATTERN.match(name)
        if match:
            found.append((int(match.group(1)), os.path.join(folder, name)))
    return sorted(found)


class EpochCheckpoints(keras.callbacks.Callback):
    """Save the weights after every epoch to `checkpoint_path(run_dir, epoch)`, keeping the
    newest `keep` files (older ones are deleted). Each is `model.save_weights`' file, which
    for a compiled model also holds the optimizer's state (Adam: 3× the parameters, 155 MB
    for recurrent k=5 on SB); averaging reads only the model's weights from it.

    Args:
        run_dir: str. The run directory.
        keep: int >= 1. How many of the newest epoch checkpoints to keep.
    """

    def __init__(self, run_dir, keep):
        super().__init__()
        if int(keep) < 1:
            raise ValueError(f"keep must be >= 1. Received: keep={keep}")
        self.run_dir = run_dir
        self.keep = int(keep)

    def on_epoch_end(self, epoch, logs=None):
        path = checkpoint_path(self.run_dir, epoch + 1)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        self.model.save_weights(path)
        for _, old in list_checkpoints(self.run_dir)[:-self.keep]:
            os.remove(old)


def average_weights(model, paths):
    """Set `model`'s weights to the element-wise mean of the weight files `paths`.

    Floating-point variables are averaged (in float64, then cast back); any other variable
    (an integer counter or seed state) takes its value from the last file.

    Args:
        model: a built Keras model whose weights the files hold.
        paths: list of `.weights.h5` files written by `model.save_weights`.
    Returns:
        `model`, its weights replaced.
    """
    if not paths:
        raise ValueError("average_weights needs at least one weights file; received none")
    sums = None
    for path in paths:
        if not os.path.exists(path):
            raise FileNotFoundError(f"No weights file at {path}")
        model.load_weights(path)
        values = [keras.ops.convert_to_numpy(v.value) for v in model.weights]
        if sums is None:
            sums = [v.astype("float64") if _is_float(v) else v for v in values]
        else:
            sums = [s + v if _is_float(v) else v for s, v in zip(sums, values)]
    for variable, total in zip(model.weights, sums):
        if _is_float(total):
            variable.assign((total / len(paths)).astype(variable.dtype))
        else:
            variable.assign(total)
    return model


def average_checkpoints(run_dir, last=None, epochs=None, output="averaged.keras",
                        model_file="best.keras"):
    """Average epoch checkpoints of a run into `run_dir/output`, a model `Translator.from_run
    (run_dir, model_file=output)` and `keras-rnmt translate --model-file` load.

    Args:
        run_dir: str. A run trained with `keep_checkpoints > 0`.
        last: int. Average the newest `last` checkpoints. Exactly one of `last`, `epochs`.
        epochs: list of int. Average these 1-based epochs' checkpoints.
        output: str. File name (in `run_dir`) or path of the averaged `.keras` model.
        model_file: str. The run's `.keras` model that gives the architecture.
    Returns:
        `(path, epochs)`: the averaged model's path and the epochs averaged.
    """
    if (last is None) == (epochs is None):
        raise ValueError("Give exactly one of last=N (newest N checkpoints) or epochs=[...]. "
                         f"Received: last={last}, epochs={epochs}")
    available = dict(list_checkpoints(run_dir))
    if not available:
        raise FileNotFoundError(
            f"No epoch checkpoints in {os.path.join(run_dir, CHECKPOINT_DIR)}: train with "
            "--keep-checkpoints N to keep the last N epochs' weights")
    if last is not None:
        if int(last) < 1 or int(last) > len(available):
            raise ValueError(f"last must be in 1..{len(available)} (the checkpoints of "
                             f"epochs {sorted(available)}). Received: last={last}")
        epochs = sorted(available)[-int(last):]
    missing = [e for e in epochs if e not in available]
    if missing:
        raise ValueError(f"No checkpoint for epoch(s) {missing} in {run_dir}; available: "
                         f"{sorted(available)}")
    model = keras.saving.load_model(os.path.join(run_dir, model_file))
    average_weights(model, [available[e] for e in epochs])
    path = output if os.path.dirname(output) else os.path.join(run_dir, output)
    model.save(path)
    return path, list(epochs)


def _is_float(value):
    return np.issubdtype(np.asarray(value).dtype, np.floating)
