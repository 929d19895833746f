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


# Runs in an interpreter of its own, TensorFlow only, never keras-rnmt: one JSON request a
# line (a SavedModel's path and the inputs), one JSON answer a line. Each request loads its
# SavedModel afresh, as a new serving process would.
SERVE = """
import json, sys, traceback
import tensorflow as tf
for line in sys.stdin:
    request = json.loads(line)
    try:
        serve = tf.saved_model.load(request["path"]).signatures["serving_default"]
        out = serve(inputs=tf.constant(request["inputs"], tf.string))
        assert "keras_rnmt" not in sys.modules, sorted(sys.modules)
        answer = {"translations": [t.decode() for t in out["translations"].numpy()],
                  "scores": out["scores"].numpy().tolist()}
    except Exception:
        answer = {"error": traceback.format_exc()}
    print(json.dumps(answer), flush=True)
"""
_SERVER = []  # this pytest process's serving process, started on first use


def serve_in_tensorflow_only_process(path, inputs):
    """`{"translations", "scores"}` of the SavedModel at `path` for `inputs`, served by plain
    `tf.saved_model.load` in an interpreter that never imports keras-rnmt.

    One such process per pytest process serves every request: each started process spent
    10 of its 14-18 CPU-s importing TensorFlow (2-core AMD EPYC).
    """
    import atexit
    import tempfile

    if not _SERVER or _SERVER[0].poll() is not None:
        log = tempfile.TemporaryFile("w+")
        env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
        process = subprocess.Popen([sys.executable, "-c", SERVE], stdin=subprocess.PIPE,
                                   stdout=subprocess.PIPE, stderr=log, text=True, env=env)
        atexit.register(process.kill)
        _SERVER[:] = [process, log]
    process, log = _SERVER
    process.stdin.write(json.dumps({"path": str(path), "inputs": list(inputs)}) + "\n")
    process.stdin.flush()
    line = process.stdout.readline()
    while line and not line.startswith("{"):  # anything else TensorFlow printed
        line = process.stdout.readline()
    if not line:  # the process died: show why
        log.seek(0)
        raise RuntimeError(f"the serving process exited ({process.wait()}):\n{log.read()}")
    answer = json.loads(line)
    assert "error" not in answer, answer.get("error")
    return answer
