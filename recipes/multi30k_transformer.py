"""Multi30k en→de with the keras-hub Transformer: the comparison row of the quality grid.

    keras-rnmt train recipes/multi30k_transformer.py
    keras-rnmt train recipes/multi30k_transformer.py --transformer-layers 6 --epochs 40
    keras-rnmt train recipes/multi30k_transformer.py --normalize-first true   # pre-LN blocks

The data, vocabularies, batches, embedding width (256 = d_model) and dropout are SB's
(`recipes/multi30k.py`); the model and its optimisation are the Transformer's own: 3 encoder
and 3 decoder blocks, 4 heads, feed-forward 1024; Adam with a linear warm-up over 1,000 steps
to 1e-3, then 1/sqrt(step) decay (Vaswani et al. 2017 §5.3); label smoothing 0.1; Keras' and
keras-hub's default initialisers (the paper's ±0.1 init is for the RNNs).
"""

import os

from keras_rnmt.cli import load_recipe


def config():
    sb = load_recipe(os.path.join(os.path.dirname(os.path.abspath(__file__)), "multi30k.py"))
    return sb.config().override({
        "model_type": "transformer",
        "transformer_layers": 3,
        "num_heads": 4,
        "intermediate_dim": 1024,
        # Post-LN as in Vaswani et al. and the recorded rows; SB's pre-LN is for the
        # self-attention encoder, which trains without this warm-up.
        "normalize_first": False,
        "warmup_steps": 1000,
        "learning_rate": 1e-3,
        "label_smoothing": 0.1,
        "uniform_init": 0.0,
    })
