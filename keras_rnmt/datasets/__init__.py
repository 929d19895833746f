"""Datasets: Multi30k (real) and a synthetic toy language pair."""

from keras_rnmt.datasets.multi30k import multi30k
from keras_rnmt.datasets.toy import (
    toy_rules,
    toy_splits,
    toy_translate_sentence,
    toy_translation,
)

__all__ = [
    "multi30k",
    "toy_rules",
    "toy_splits",
    "toy_translate_sentence",
    "toy_translation",
]
