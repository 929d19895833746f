"""Optimizers by name, including the paper's SGD setup (Yang et al. §3.2)."""

import keras
import numpy as np
from keras import ops

from keras_rnmt.training.adam import Adam
from keras_rnmt.training.callbacks import resumed_best

OPTIMIZERS = ("adam", "sgd", "paper-sgd")
# Layers whose scale and offset start at 1 and 0 by design; `uniform_initialize` leaves them.
NORMALIZATION_LAYERS = (keras.layers.LayerNormalization, keras.layers.BatchNormalization,
                        keras.layers.GroupNormalization, keras.layers.RMSNormalization)


@keras.saving.register_keras_serializable(package="keras_rnmt")
class HalvingSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Constant learning rate, halved every epoch once `start_epoch` epochs have passed.

    Yang et al. §3.2 (English-German): lr 0.7, "start to halve the learning rate every
    epoch after training for 8 epochs".

    Args:
        initial_learning_rate: float.
        steps_per_epoch: int.
        start_epoch: int. Epochs trained at the initial rate. Defaults to 8.
    """

    def __init__(self, initial_learning_rate, steps_per_epoch, start_epoch=8):
        self.initial_learning_rate = initial_learning_rate
        self.steps_per_epoch = steps_per_epoch
        self.start_epoch = start_epoch

    def __call__(self, step):
        epoch = ops.floor(ops.cast(step, "float32") / float(self.steps_per_epoch))
        halvings = ops.maximum(epoch - float(self.start_epoch) + 1.0, 0.0)
        return self.initial_learning_rate * ops.power(0.5, halvings)

    def get_config(self):
        return {
            "initial_learning_rate": self.initial_learning_rate,
            "steps_per_epoch": self.steps_per_epoch,
            "start_epoch": self.start_epoch,
        }


@keras.saving.register_keras_serializable(package="keras_rnmt")
class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up to `peak_learning_rate`, then inverse-square-root decay.

    Vaswani et al. 2017 §5.3 with the peak given directly (JoeyNMT's
    "warmupinversesquareroot"): with s = step + 1 and w = `warmup_steps`,
    lr(s) = peak · min(s / w, sqrt(w / s)), so lr(w) = peak and lr(4w) = peak / 2.

    Args:
        peak_learning_rate: float.
        warmup_steps: int > 0.
    """

    def __init__(self, peak_learning_rate, warmup_steps):
        if warmup_steps <= 0:
            raise ValueError(f"`warmup_steps` must be > 0. Received: {warmup_steps}")
        self.peak_learning_rate = peak_learning_rate
        self.warmup_steps = warmup_steps

    def __call__(self, step):
        s = ops.cast(step, "float32") + 1.0
        w = float(self.warmup_steps)
        return self.peak_learning_rate * ops.minimum(s / w, ops.sqrt(w / s))

    def get_config(self):
        return {"peak_learning_rate": self.peak_learning_rate,
                "warmup_steps": self.warmup_steps}


def get_optimizer(name, learning_rate=None, clipnorm=None, steps_per_epoch=None,
                  warmup_steps=0):
    """Build an optimizer by name.

    Args:
        name: "adam" (lr 1e-3; `keras_rnmt.training.adam.Adam`, Keras' Adam in one fused
            kernel under PyTorch), "sgd" (plain SGD), or "paper-sgd": SGD with lr 0.7 halved
            every epoch after epoch 8, gradients rescaled to global norm 3 (Yang et al. §3.2;
            combine with `uniform_initialize(model, 0.1)`).
        learning_rate: float or None for the optimizer's default above.
        clipnorm: float or None. Global-norm gradient clipping.
        steps_per_epoch: int. Needed by "paper-sgd".
        warmup_steps: int. > 0: "adam" and "sgd" warm up linearly to `learning_rate` over
            this many steps, then decay as 1/sqrt(step) (`WarmupSchedule`, the Transformer's
            schedule). 0: a constant rate.
    """
    if name not in OPTIMIZERS:
        raise ValueError(f"Unknown optimizer {name!r}. Valid choices: {', '.join(OPTIMIZERS)}")
    if warmup_steps and name == "paper-sgd":
        raise ValueError("The 'paper-sgd' optimizer has its own schedule (halving after epoch "
                         f"8); use warmup_steps=0 with it. Received: warmup_steps={warmup_steps}")
    if name in ("adam", "sgd"):
        rate = learning_rate or (1e-3 if name == "adam" else 0.1)
        if warmup_steps:
            rate = WarmupSchedule(rate, warmup_steps)
        optimizer = Adam if name == "adam" else keras.optimizers.SGD
        return optimizer(rate, global_clipnorm=clipnorm)
    if not steps_per_epoch:
        raise ValueError("The 'paper-sgd' optimizer needs `steps_per_epoch`.")
    schedule = HalvingSchedule(learning_rate or 0.7, steps_per_epoch, start_epoch=8)
    return keras.optimizers.SGD(schedule, global_clipnorm=clipnorm or 3.0)


def plateau_decay(factor, patience=1, validation_bleu=True, best_path=None):
    """Multiply the learning rate by `factor` after `patience` epochs without improvement.

    JoeyNMT's and OpenNMT's "plateau" schedule, on validation BLEU (higher is better; list it
    after `BleuCallback`, which logs `val_bleu`) or, with `validation_bleu=False`, on the
    validation loss. Needs a constant-rate optimizer (no `WarmupSchedule` or paper-sgd).

    Args:
        factor: float in (0, 1), e.g. 0.5 to halve.
        patience: int >= 0. Epochs without improvement before each decay.
        validation_bleu: bool. Monitor `val_bleu` (True) or `val_loss`.
        best_path: optional, `BleuCallback`'s `best_path`. When `BackupAndRestore` resumes
            the run at a later epoch, the best BLEU and the epochs since it are read from
            its record, so the decay goes on as if the run had not stopped (the rate itself
            is an optimizer variable, restored with the weights).

    Returns:
        A `keras.callbacks.ReduceLROnPlateau`.
    """
    if not 0.0 < factor < 1.0:
        raise ValueError(f"The learning-rate decay factor must be in (0, 1). Received: {factor}")
    return _PlateauDecay(
        best_path if validation_bleu else None,
        monitor="val_bleu" if validation_bleu else "val_loss",
        mode="max" if validation_bleu else "min", factor=factor, patience=patience,
        min_delta=0.0, cooldown=0, verbose=1)


class _PlateauDecay(keras.callbacks.ReduceLROnPlateau):
    """`ReduceLROnPlateau` that takes its state back from `BleuCallback`'s record on resume."""

    def __init__(self, best_path, **kwargs):
        super().__init__(**kwargs)
        self.best_path = best_path
        self._resumed = False

    def on_train_begin(self, logs=None):
        super().on_train_begin(logs)
        self._resumed = False

    def on_epoch_begin(self, epoch, logs=None):
        if self._resumed or self.best_path is None:
            return
        self._resumed = True
        record = resumed_best(self.best_path, epoch)
        if record is not None:
            # With cooldown 0 the wait restarts after each decay: it is the epochs since
            # the best one modulo the patience.
            since = epoch - record["epoch"]
            self.best = record["val_bleu"]
            self.wait = since % self.patience if self.patience else 0


def uniform_initialize(model, scale=0.1, seed=0):
    """Re-initialise every weight uniformly in [-scale, scale] (Sutskever et al. 2014).

    Call after the model is built, before training. Normalization layers
    (`NORMALIZATION_LAYERS`, e.g. the Transformer's layer norms) keep their initial scale 1
    and offset 0: drawn in ±scale, a scale would flip signs and shrink every activation.
    """
    kept = {id(variable) for layer in model._flatten_layers(include_self=True)
            if isinstance(layer, NORMALIZATION_LAYERS) for variable in layer.weights}
    rng = np.random.default_rng(seed)
    for variable in model.trainable_variables:
        if id(variable) in kept:
            continue
        shape = tuple(variable.shape)
        variable.assign(rng.uniform(-scale, scale, size=shape).astype(variable.dtype))
