"""Tiny models, tokenizers and run directories shared by the translator, CLI and plot tests.

A run directory is what `train_and_evaluate` leaves behind, cut to what `Translator.from_run`
and `keras-rnmt plot` read: `best.keras`, the two tokenizers and `log.csv`.
"""

import json
import os
import subprocess
import sys

import keras

from keras_rnmt.data import build_tokenizer, make_dataset, with_batch_count
from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.training.callbacks import BleuCallback
from keras_rnmt.training.heatmap_callback import AttentionHeatmapCallback
from keras_rnmt.training.losses import MaskedCrossEntropy
from keras_rnmt.translator import Translator

SOURCES = ["a dog runs .", "the cat sleeps", "a bird sings on a tree .", "two dogs play ."]
TARGETS = ["ein hund läuft .", "die katze schläft", "ein vogel singt auf einem baum .",
           "zwei hunde spielen ."]


def tiny_parts(sources=SOURCES, targets=TARGETS, seed=0, **overrides):
    """(model, source_tokenizer, target_tokenizer): word tokenizers and a tiny recurrent
    attention model (any `ModelConfig` field overridable), its weights fixed by `seed`."""
    keras.utils.set_random_seed(seed)
    source_tokenizer = build_tokenizer("word", sources, min_frequency=1)
    target_tokenizer = build_tokenizer("word", targets, min_frequency=1)
    values = dict(embedding_dim=8, encoder_units=8, decoder_units=16, attention="recurrent",
                  window=1, memory_units=4, attention_units=8, dropout=0.0)
    values.update(overrides)
    model = build_model(ModelConfig(
        source_vocab_size=source_tokenizer.vocabulary_size(),
        target_vocab_size=target_tokenizer.vocabulary_size(), **values))
    return model, source_tokenizer, target_tokenizer


def save_run(path, model, source_tokenizer, target_tokenizer):
    """Write `best.keras` and the tokenizers into `path` (a run directory); returns `path`."""
    os.makedirs(path, exist_ok=True)
    model.save(os.path.join(path, "best.keras"))
    source_tokenizer.save(os.path.join(path, "source_tokenizer.json"))
    target_tokenizer.save(os.path.join(path, "target_tokenizer.json"))
    return path


def train_run(path, epochs=2, heatmap_sentences=SOURCES[:2], **overrides):
    """Fit a tiny model on SOURCES/TARGETS the way `train_and_evaluate` does, into `path`.

    Callbacks as in train.py (validation BLEU saving `best.keras`, then `CSVLogger`) plus an
    `AttentionHeatmapCallback` writing `path/heatmaps/`. Returns (model, tokenizers...).
    """
    model, source_tokenizer, target_tokenizer = tiny_parts(**overrides)
    save_run(path, model, source_tokenizer, target_tokenizer)  # tokenizers; best.keras again
    data = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer, batch_size=4,
                        shuffle=False)

    def factory(m):
        return Translator(m, source_tokenizer, target_tokenizer, beam_size=1, max_length_b=4)

    model.compile(optimizer=keras.optimizers.Adam(3e-2), loss=MaskedCrossEntropy())
    # The batch count declared, as `keras-rnmt train` does: Keras then does not warn after
    # each validation pass that the input "ran out of data".
    valid, _ = with_batch_count(data)
    model.fit(data.repeat(), validation_data=valid, epochs=epochs, steps_per_epoch=5, verbose=0,
              shuffle=False, callbacks=[
                  BleuCallback(factory, SOURCES, TARGETS, os.path.join(path, "best.keras"),
                               patience=0),
                  keras.callbacks.CSVLogger(os.path.join(path, "log.csv")),
                  AttentionHeatmapCallback(factory, heatmap_sentences,
                                           os.path.join(path, "heatmaps")),
              ])
    return model, source_tokenizer, target_tokenizer


# Runs in a fresh interpreter: TensorFlow only, no keras-rnmt.
SERVE = """
import json, sys
import tensorflow as tf
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = serve(inputs=tf.constant(json.loads(sys.argv[2]), tf.string))
assert "keras_rnmt" not in sys.modules, sorted(sys.modules)
print(json.dumps({"translations": [t.decode() for t in out["translations"].numpy()],
                  "scores": out["scores"].numpy().tolist()}))
"""


def serve_in_tensorflow_only_process(path, inputs):
    """`{"translations", "scores"}` of the SavedModel at `path` for `inputs`, served by plain
    `tf.saved_model.load` in a fresh interpreter that never imports keras-rnmt."""
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    output = subprocess.run([sys.executable, "-c", SERVE, str(path), json.dumps(inputs)],
                            capture_output=True, text=True, env=env, check=True).stdout
    return json.loads(output.strip().splitlines()[-1])
