"""Toy quickstart recipe: recurrent attention (k=1) on the embedded synthetic language pair.

    keras-rnmt train recipes/toy.py                 # a couple of minutes on 2 CPU cores
    keras-rnmt train recipes/toy.py --attention bahdanau
"""

from keras_rnmt.quickstart import toy_config


def config():
    return toy_config()
