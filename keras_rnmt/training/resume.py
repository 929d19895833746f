"""What a resumed run needs, besides `keras.callbacks.BackupAndRestore`'s backup, to train on as
if it had never stopped: the epoch its data is at, and the random state of its dropout.

`BackupAndRestore` writes the model's weights and the optimizer's state (`save_weights`) at
the end of every epoch and loads them when the run starts again. Two things it leaves out:

- The data order. Without `epoch`, `make_dataset` reshuffles with each new iterator, from the
  start of its seed's sequence in every process: a resumed run trained its first epoch after
  the restart on the orders of the run's first epoch. `DataEpoch` gives
  `make_dataset(epoch=...)` the epoch `model.fit` is in, and each epoch is shuffled from the
  seed and that epoch alone.
- The dropout masks. Keras keeps their random state in the layers' `SeedGenerator`s, whose
  state variables `save_weights` does not write, so a resumed run drew the first epoch's
  masks again; under PyTorch, a dropout layer made without a seed draws from PyTorch's global
  generator instead (`keras.src.backend.torch.random.dropout`). `RandomStateBackup` saves
  both next to the backup and restores them.

With both, a run killed after epoch `e` and started again ends with the weights of a run
that never stopped (`tests/training/test_train.py`, every backend).
"""

import os
import warnings

import keras
import numpy as np
import tensorflow as tf


class DataEpoch(keras.callbacks.Callback):
    """Tells `make_dataset(epoch=...)` the epoch `model.fit` is in.

    `model.fit` calls `on_epoch_begin` before it makes the epoch's iterator, which reads the
    variable (under TensorFlow, JAX and PyTorch).

    Attributes:
        variable: scalar int64 `tf.Variable`, the epoch (0-based).
    """

    def __init__(self):
        super().__init__()
        self.variable = tf.Variable(0, dtype=tf.int64, trainable=False, name="data_epoch")

    def on_epoch_begin(self, epoch, logs=None):
        self.variable.assign(epoch)


def random_states(model):
    """The model's variables that `model.save_weights` leaves out: its `SeedGenerator`s'
    states (dropout's random state), in the model's own order."""
    saved = {id(variable) for variable in model.weights}
    return [variable for variable in model.variables if id(variable) not in saved]


class RandomStateBackup(keras.callbacks.Callback):
    """Saves the run's random state at the end of every epoch and restores it on resume:
    the model's `random_states`, and under PyTorch its global generator's state.

    Writes `backup_dir/random_state-{N}.npz`, the state epoch `N` starts from, keeping the
    last two (`BackupAndRestore` may fall back to the backup before the last). In the first
    epoch of a process, if it is not epoch 0, it loads that epoch's file and says so; without
    one (a run backed up by an older version) it warns that the dropout masks will differ
    from a run that never stopped. Put it in the same `backup_dir` as `BackupAndRestore`,
    which deletes the folder once training ends.

    Under PyTorch, making a data iterator draws from the global generator (`DataLoader`'s
    base seed). `model.fit` makes one every epoch, unless it is given `steps_per_epoch`: then
    one iterator runs through all epochs, and a resumed run makes its own in the first epoch
    it trains. The generator's state is then restored after that, at the epoch's first batch.

    Args:
        backup_dir: str, the `BackupAndRestore` folder.
        iterator_persists: bool, whether `model.fit` keeps one data iterator across epochs
            (it is given `steps_per_epoch`). Defaults to `False`.
    """

    def __init__(self, backup_dir, iterator_persists=False):
        super().__init__()
        self.backup_dir = backup_dir
        self.iterator_persists = iterator_persists
        self._started = False
        self._torch_state = None

    def state_path(self, epoch):
        return os.path.join(self.backup_dir, f"random_state-{epoch}.npz")

    def on_train_begin(self, logs=None):
        self._started = False
        self._torch_state = None

    def on_epoch_begin(self, epoch, logs=None):
        if self._started:
            return
        self._started = True
        if epoch == 0:
            return
        path = self.state_path(epoch)
        if not os.path.exists(path):
            warnings.warn(f"{path} is missing: the run resumes at epoch {epoch + 1} with the "
                          "dropout masks of a fresh start, not those of a run that never "
                          "stopped", stacklevel=2)
            return
        variables = random_states(self.model)
        with np.load(path) as saved:
            values = [saved[name] for name in sorted(
                (name for name in saved.files if name.startswith("state_")),
                key=lambda name: int(name[len("state_"):]))]
            torch_state = saved["torch"] if "torch" in saved.files else None
        shapes = [tuple(variable.shape) for variable in variables]
        if [value.shape for value in values] != shapes:
            raise ValueError(f"{path} holds random states of shapes "
                             f"{[value.shape for value in values]}, the model has {shapes}")
        for variable, value in zip(variables, values):
            variable.assign(value)
        print(f"resumed at epoch {epoch + 1} from {self.backup_dir} (weights, optimizer and "
              "dropout's random state)")
        if torch_state is not None and keras.backend.backend() == "torch":
            self._torch_state = torch_state
            if not self.iterator_persists:
                self._restore_torch_state()

    def on_train_batch_begin(self, batch, logs=None):
        if self._torch_state is not None:
            self._restore_torch_state()

    def _restore_torch_state(self):
        import torch

        torch.set_rng_state(torch.from_numpy(self._torch_state))
        self._torch_state = None

    def on_epoch_end(self, epoch, logs=None):
        os.makedirs(self.backup_dir, exist_ok=True)
        values = {f"state_{i}": keras.ops.convert_to_numpy(variable.value)
                  for i, variable in enumerate(random_states(self.model))}
        if keras.backend.backend() == "torch":
            import torch

            values["torch"] = torch.get_rng_state().numpy()
        path = self.state_path(epoch + 1)
        with open(path + ".partial", "wb") as f:
            np.savez(f, **values)
        os.replace(path + ".partial", path)
        older = self.state_path(epoch - 1)
        if os.path.exists(older):
            os.remove(older)
