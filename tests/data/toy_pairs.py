"""The toy corpus the pipeline tests batch, and word tokenizers built on it."""

from keras_rnmt.data import WordTokenizer
from keras_rnmt.datasets import toy_translation

SOURCES, TARGETS = toy_translation(400, seed=5)


def tokenizers():
    """Source and target `WordTokenizer`s with the toy corpus' vocabularies."""
    source, target = WordTokenizer(), WordTokenizer()
    source.build_vocabulary(SOURCES)
    target.build_vocabulary(TARGETS)
    return source, target
