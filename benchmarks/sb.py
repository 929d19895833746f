"""The standard benchmark config (SB) shared by every benchmark script, and its FLOP count.

SB: Multi30k en→de `lc.norm.tok`, word vocabularies (min frequency 2), embeddings 256,
bi-LSTM encoder 256 per direction, one LSTM decoder layer of 512, additive attention from
the new decoder state with input feeding of the attentional vector, bridge, dropout 0.2,
batches of 64 sentences, Adam 1e-3 (JoeyNMT: `../shared/peer/joeynmt_sb.yaml`).
"""

import json
import os
import signal
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def data_dir():
    """The folder holding Multi30k (`$KERAS_RNMT_DATA/multi30k`, else `../shared/data/...`)."""
    base = os.environ.get("KERAS_RNMT_DATA") or os.path.join(ROOT, "..", "shared", "data")
    path = os.path.join(base, "multi30k")
    if not os.path.exists(os.path.join(path, "train.lc.norm.tok.en")):
        raise SystemExit(f"Multi30k not found in {path}: set KERAS_RNMT_DATA")
    return os.path.abspath(path)


def exit_on_sigterm():
    """Turn SIGTERM (`kill PID`) into `SystemExit`, so a driver script's running
    `subprocess.run` kills its child (a training run, a worker) before exiting, instead of
    leaving it running on the machine's two cores. Call it from a script's ``__main__``."""

    def stop(signum, frame):
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)


def worker_env(**variables):
    """The environment for a worker process: `variables`, quiet TensorFlow logs and an
    absolute KERAS_RNMT_DATA (workers run in another folder, where a relative one breaks)."""
    return dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
                KERAS_RNMT_DATA=os.path.dirname(data_dir()), **variables)


def sb_config(**changes):
    """The SB `TrainConfig` (from recipes/multi30k.py) with optional config changes."""
    from keras_rnmt.cli import load_recipe

    recipe = load_recipe(os.path.join(ROOT, "recipes", "multi30k.py"))
    return recipe.config().override({"data_dir": data_dir(), **changes})


def result_line(process, what):
    """The `RESULT {json}` line a worker subprocess printed, as a dict (or exit with its log)."""
    lines = [line for line in process.stdout.splitlines() if line.startswith("RESULT ")]
    if process.returncode or not lines:
        raise SystemExit(f"{what} failed (exit {process.returncode}):\n"
                         + process.stdout[-2000:] + process.stderr[-4000:])
    return json.loads(lines[-1][len("RESULT "):])


def report(figures, path=""):
    """Print every figure as one `FIGURES {json}` line, and write them to `path` if given."""
    print("FIGURES " + json.dumps(figures))
    if path:
        with open(path, "w") as f:
            json.dump(figures, f, indent=2)


def matmul_peak(n=2048, repeats=10):
    """float32 numpy matmul FLOP/s (best of `repeats`), the machine's practical peak."""
    import time

    a = np.random.default_rng(0).standard_normal((n, n), dtype=np.float32)
    b = np.random.default_rng(1).standard_normal((n, n), dtype=np.float32)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2.0 * n ** 3 / best


def training_flops(model_config, source_lengths, target_lengths):
    """Multiply-add FLOPs (x2) of one training step (forward + backward = 3x forward).

    Counts real (unpadded) tokens only, so the figure is the useful work of the batch:
    the encoder per source token, the decoder RNN, attention query/combine and the
    vocabulary projection per target token, and the attention energies and read-out per
    (target, source) pair.

    Args:
        model_config: the `ModelConfig` (vocabulary sizes filled in).
        source_lengths, target_lengths: int arrays (batch,) of real lengths incl. `</s>`.
    """
    c = model_config
    directions = 2 if c.bidirectional else 1
    gates = 4 if c.cell == "lstm" else 3
    encoder = 0
    width = c.embedding_dim
    for _ in range(c.encoder_layers):
        encoder += directions * 2 * (width + c.encoder_units) * gates * c.encoder_units
        width = directions * c.encoder_units
    memory = width
    units = c.decoder_units
    attention = c.attention_units or units
    feed = {"attentional": units, "context": memory, "none": 0}[c.input_feeding]
    decoder = 2 * (c.embedding_dim + feed + units) * gates * units  # RNN
    decoder += 2 * units * attention  # U_a s_j
    decoder += 2 * (memory + units) * units  # W_c [c_j; s_j]
    decoder += 2 * units * c.target_vocab_size  # output projection
    encoder += 2 * memory * attention  # W_a h_i, once per source token
    pair = 2 * attention + 2 * memory  # v_a tanh(.), and c_j = sum a_ij h_i
    source_lengths = np.asarray(source_lengths, dtype=np.float64)
    target_lengths = np.asarray(target_lengths, dtype=np.float64)
    forward = (encoder * source_lengths.sum() + decoder * target_lengths.sum()
               + pair * (source_lengths * target_lengths).sum())
    return 3.0 * forward
