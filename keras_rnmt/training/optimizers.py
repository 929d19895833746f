"""Optimizers by name, including the paper's SGD setup (Yang et al. §3.2)."""

import keras
import numpy as np
from keras import ops

OPTIMIZERS = ("adam", "sgd", "paper-sgd")


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


def get_optimizer(name, learning_rate=None, clipnorm=None, steps_per_epoch=None):
    """Build an optimizer by name.

    Args:
        name: "adam" (lr 1e-3), "sgd" (plain SGD), or "paper-sgd": SGD with lr 0.7 halved
            every epoch after epoch 8, gradients rescaled to global norm 3 (Yang et al. §3.2;
            combine with `uniform_initialize(model, 0.1)`).
        learning_rate: float or None for the optimizer's default above.
        clipnorm: float or None. Global-norm gradient clipping.
        steps_per_epoch: int. Needed by "paper-sgd".
    """
    if name == "adam":
        return keras.optimizers.Adam(learning_rate or 1e-3, global_clipnorm=clipnorm)
    if name == "sgd":
        return keras.optimizers.SGD(learning_rate or 0.1, global_clipnorm=clipnorm)
    if name == "paper-sgd":
        if not steps_per_epoch:
            raise ValueError("The 'paper-sgd' optimizer needs `steps_per_epoch`.")
        schedule = HalvingSchedule(learning_rate or 0.7, steps_per_epoch, start_epoch=8)
        return keras.optimizers.SGD(schedule, global_clipnorm=clipnorm or 3.0)
    raise ValueError(f"Unknown optimizer {name!r}. Valid choices: {', '.join(OPTIMIZERS)}")


def uniform_initialize(model, scale=0.1, seed=0):
    """Re-initialise every weight uniformly in [-scale, scale] (Sutskever et al. 2014).

    Call after the model is built, before training.
    """
    rng = np.random.default_rng(seed)
    for variable in model.trainable_variables:
        shape = tuple(variable.shape)
        variable.assign(rng.uniform(-scale, scale, size=shape).astype(variable.dtype))
