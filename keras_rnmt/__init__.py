"""keras-rnmt: attention-based recurrent neural machine translation for Keras 3.

Importing the package registers every serializable class (attention layers, encoders,
decoders, models, losses, learning-rate schedules), so `keras.saving.load_model` can read any keras-rnmt `.keras`
file after `import keras_rnmt`.
"""

from keras_rnmt import attention, models
from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.training import losses, optimizers
from keras_rnmt.version import __version__

__all__ = ["ModelConfig", "__version__", "attention", "build_model", "losses", "models", "optimizers"]
