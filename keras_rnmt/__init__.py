"""keras-rnmt: attention-based recurrent neural machine translation for Keras 3."""

from keras_rnmt.version import __version__

__all__ = ["__version__"]
