"""Export a trained model and its tokenizers as one TensorFlow SavedModel.

The SavedModel maps raw strings to translations with no Python and no keras-rnmt at
serving time: tokenisation, `</s>`, padding, beam search and detokenisation all run in
its graph, so `tf.saved_model.load(path).signatures["serving_default"]` (or TF Serving)
is all a client needs. Its signature:

    serving_default(inputs: tf.string (B,)) -> {"translations": tf.string (B,),
                                                "scores": tf.float32 (B,)}

It gives what `Translator(model, ..., beam_size, length_penalty)` gives, blank inputs
included (empty translation, score 0). Exporting needs `KERAS_BACKEND=tensorflow`;
`export_run` (and the command below) reloads a run trained under JAX or PyTorch in a
TensorFlow-backend subprocess:

    python -m keras_rnmt.export runs/rec5 saved_models/rec5 --beam-size 5
"""

import argparse
import json
import os
import subprocess
import sys

import keras

# Python's `str.isspace` characters (what `Translator` strips), as an RE2 class.
BLANK_PATTERN = r"[\t-\r\x1c-\x1f\x85\p{Z}]*"
# The shortest static output length T; the graph holds one search per T in 16·4^k.
FIRST_BUCKET = 16
# `Translator` pads sources to a multiple of this; the same padding gives the same numbers.
SOURCE_PAD_MULTIPLE = 8


def _require_tensorflow(function):
    backend = keras.backend.backend()
    if backend != "tensorflow":
        raise RuntimeError(
            f"{function} traces the model into a TensorFlow graph and needs "
            f"KERAS_BACKEND=tensorflow; the backend is {backend!r}. Use "
            "`export_run(run_dir, path)` or `python -m keras_rnmt.export RUN_DIR PATH`, "
            "which reload the model under TensorFlow."
        )


def step_buckets(max_output_length):
    """The static output lengths T the graph picks from: 16, 64, 256, ... up to the limit.

    `beam_search` needs a static T; each bucket is one traced search in the graph, and a
    batch runs in the smallest that fits its longest limit (at most 4x too long).
    """
    if not isinstance(max_output_length, int) or max_output_length < 1:
        raise ValueError(
            f"max_output_length must be a positive int; received {max_output_length!r}"
        )
    buckets, steps = [], FIRST_BUCKET
    while steps < max_output_length:
        buckets.append(steps)
        steps *= 4
    return tuple(buckets) + (max_output_length,)


def _make_module(model, source_tokenizer, target_tokenizer, beam_size, length_penalty,
                 coverage_penalty, max_length_a, max_length_b, max_output_length, stop_rule):
    import tensorflow as tf

    from keras_rnmt.search.programs import search_programs

    buckets = step_buckets(max_output_length)
    # Only the tokens are served: the attention history is carried only for the coverage
    # penalty (at T = 256 its buffers cost more memory traffic per step than the model).
    options = dict(beam_size=beam_size, n_best=1, length_penalty=length_penalty,
                   coverage_penalty=coverage_penalty, stop_rule=stop_rule, in_graph=True,
                   keep_attention=coverage_penalty > 0)
    # `Translator`'s program for each bucket T: greedy search for beam 1, else beam search
    # shedding the sentences already done between chunks of steps.
    programs = {steps: search_programs(model, target_tokenizer.bos_id,
                                       target_tokenizer.eos_id, steps, **options)[0]
                for steps in buckets}

    def search(source, max_length, max_steps):
        """Search on padded ids (B', S) -> (texts (B',), scores (B',))."""
        tokens, scores, _ = programs[max_steps](source, max_length)  # 1-best lists
        return target_tokenizer.detokenize(tokens[:, 0]), scores[:, 0]

    def translate(strings):
        """Non-blank strings (B',) -> (texts (B',), scores (B',))."""
        ids = source_tokenizer.tokenize(strings)  # B' x None, ragged
        eos = tf.fill([tf.shape(strings)[0], 1], tf.constant(source_tokenizer.eos_id, tf.int32))
        ids = tf.concat([ids, tf.RaggedTensor.from_tensor(eos)], axis=1)
        lengths = tf.cast(ids.row_lengths(), tf.int32)
        width = -(-tf.reduce_max(lengths) // SOURCE_PAD_MULTIPLE) * SOURCE_PAD_MULTIPLE
        source = ids.to_tensor(default_value=0)
        source = tf.pad(source, [[0, 0], [0, width - tf.shape(source)[1]]])  # B' x S
        # float64 and ceil, as `Translator` computes the limits with numpy.
        limits = tf.math.ceil(max_length_a * tf.cast(lengths, tf.float64) + max_length_b)
        limits = tf.cast(limits, tf.int32)
        # beam_search needs a static T: pick the smallest bucket that fits every limit.
        bucket = tf.searchsorted(tf.constant(buckets, tf.int32),
                                 tf.reduce_max(limits)[tf.newaxis])[0]
        bucket = tf.minimum(bucket, len(buckets) - 1)
        branches = [lambda steps=steps: search(source, limits, steps) for steps in buckets]
        return tf.switch_case(bucket, branches)

    class TranslationModule(tf.Module):
        def __init__(self):
            super().__init__(name="translation")
            # Attributes, so the variables and lookup tables are saved with the graph.
            self.model = model
            self.source_tokenizer = source_tokenizer
            self.target_tokenizer = target_tokenizer

        @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="inputs")],
                     autograph=False)  # explicit tf.cond / switch_case; nothing to convert
        def serve(self, inputs):
            batch = tf.shape(inputs)[0]
            keep = tf.logical_not(tf.strings.regex_full_match(inputs, BLANK_PATTERN))
            index = tf.where(keep)  # B' x 1
            strings = tf.gather_nd(inputs, index)
            texts, scores = tf.cond(
                tf.size(strings) > 0,
                lambda: translate(strings),
                lambda: (tf.zeros([0], tf.string), tf.zeros([0], tf.float32)),
            )
            return {
                "translations": tf.tensor_scatter_nd_update(tf.fill([batch], ""), index, texts),
                "scores": tf.tensor_scatter_nd_update(tf.zeros([batch], tf.float32), index,
                                                      scores),
            }

    return TranslationModule()


def _check_export_directory(path):
    """Raise the OSError that says why `path` cannot become the SavedModel directory, before
    minutes of loading and tracing are spent; creates nothing (bad options found later
    leave no empty directory)."""
    if os.path.exists(path) and not os.path.isdir(path):
        raise NotADirectoryError(f"{path} is a file: a SavedModel is written to a directory")
    existing = os.path.abspath(path)
    while not os.path.exists(existing):  # the nearest existing ancestor, created in
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise NotADirectoryError(f"{path}: {existing} is a file, not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise PermissionError(f"{path}: {existing} cannot be written")


def export_saved_model(model, source_tokenizer, target_tokenizer, path, beam_size=5,
                       length_penalty=1.0, max_length_a=1.5, max_length_b=10,
                       coverage_penalty=0.0, max_output_length=512, stop_rule="current"):
    """Write a SavedModel that translates raw strings with beam search.

    The serving graph does what `Translator` does in Python: tokenise, append `</s>`, pad
    with 0, limit each output to ceil(a·|source| + b) tokens (|source| counts `</s>`),
    run `Translator`'s search over `model.search_step` (`search.programs.search_programs`:
    greedy search for ``beam_size=1``, else `beam_search`'s hypotheses with finished
    sentences shed from the batch between chunks of steps), detokenise the best hypothesis. Blank
    inputs give "" and score 0. Per-sentence limits above `max_output_length` are clipped
    to it (`Translator` has no such cap).

    Args:
        model: a `TranslationModel` (anything with `search_state`/`search_step`).
        source_tokenizer, target_tokenizer: keras-rnmt tokenizers. The word tokenizer needs
            only core TensorFlow ops; WordPiece/SentencePiece need `tensorflow_text`
            imported before `tf.saved_model.load`.
        path: str, the SavedModel directory.
        beam_size: int. Defaults to 5.
        length_penalty: float, GNMT α. Defaults to 1.0.
        max_length_a, max_length_b: floats, the output limit a·|source| + b. Defaults to 1.5
            and 10.
        coverage_penalty: float, GNMT β. Defaults to 0.
        max_output_length: int, the longest output (</s> included) the graph can produce.
            The graph holds one search per `step_buckets(max_output_length)` entry.
            Defaults to 512.
        stop_rule: str, beam search's stopping rule, "current" or "bound" (see
            `keras_rnmt.search.beam`). Defaults to "current", as `Translator`.

    Returns:
        The exported `tf.Module`; its `serve(inputs)` is the `serving_default` signature.

    Example:
    ```python
    export_saved_model(model, source_tokenizer, target_tokenizer, "saved_models/rec5")
    serve = tf.saved_model.load("saved_models/rec5").signatures["serving_default"]
    serve(inputs=tf.constant(["a dog runs ."]))["translations"]
    ```
    """
    import tensorflow as tf

    from keras_rnmt.search import check_output_limits, check_positive_int, check_stop_rule

    _require_tensorflow("export_saved_model")
    check_positive_int("beam_size", beam_size)
    check_stop_rule(stop_rule)
    check_output_limits(max_length_a, max_length_b)
    _check_export_directory(path)
    module = _make_module(model, source_tokenizer, target_tokenizer, beam_size,
                          float(length_penalty), float(coverage_penalty), float(max_length_a),
                          float(max_length_b), max_output_length, stop_rule)
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return module


def export_run(run_dir, path, model_file="best.keras", dtype_policy=None, **kwargs):
    """Export the model and tokenizers of a training run directory under any backend.

    Reads `run_dir/best.keras` and `run_dir/{source,target}_tokenizer.json`; the beam size
    and length penalty default to the run's `config.json` (as `Translator.from_run`).
    Under JAX or PyTorch the export runs in a `KERAS_BACKEND=tensorflow` subprocess.

    Args:
        run_dir: str, the run directory.
        path: str, the SavedModel directory to write.
        model_file: str, the model file inside `run_dir`. Defaults to "best.keras".
        dtype_policy: optional Keras dtype policy name (e.g. "mixed_bfloat16") the exported
            graph computes in, whatever the policy of training: its weights stay float32,
            its matmuls run in bfloat16 (the weights cast once per call, outside the search
            loop) and a few hypotheses change. On a CPU with AVX-512 BF16 that served
            batches of 64 1.36× faster and single sentences 1.4× faster
            (`benchmarks/RESULTS.md` §2). Defaults to the global policy.
        **kwargs: `export_saved_model` options (`beam_size`, `length_penalty`, ...).

    Returns:
        `path`.
    """
    unknown = sorted(set(kwargs) - set(_OPTIONS))
    if unknown:
        raise ValueError(f"Unknown option(s) {unknown}; valid options: {sorted(_OPTIONS)}")
    model_path = os.path.join(run_dir, model_file)
    if not os.path.exists(model_path):
        raise FileNotFoundError(f"No model at {model_path} (is {run_dir} a keras-rnmt run directory?)")
    _check_export_directory(path)
    if keras.backend.backend() != "tensorflow":
        command = [sys.executable, "-m", "keras_rnmt.export", run_dir, path,
                   "--model-file", model_file]
        if dtype_policy is not None:
            command += ["--dtype-policy", dtype_policy]
        for name, value in kwargs.items():
            command += ["--" + name.replace("_", "-"), str(value)]
        _run_export_process(command, {**os.environ, "KERAS_BACKEND": "tensorflow"})
        return path

    import keras_rnmt.models  # noqa: F401  (registers the model classes for load_model)
    from keras_rnmt.data import load_tokenizer
    from keras_rnmt.translator import load_model

    settings = {}
    config_path = os.path.join(run_dir, "config.json")
    if os.path.exists(config_path):
        with open(config_path) as file:
            train = json.load(file)
        settings = {name: train[name] for name in ("beam_size", "length_penalty") if name in train}
    model = load_model(model_path, dtype_policy)
    source = load_tokenizer(os.path.join(run_dir, "source_tokenizer.json"))
    target = load_tokenizer(os.path.join(run_dir, "target_tokenizer.json"))
    export_saved_model(model, source, target, path, **{**settings, **kwargs})
    return path


# export_run's options and their command-line types.
_OPTIONS = {"beam_size": int, "length_penalty": float, "coverage_penalty": float,
            "max_length_a": float, "max_length_b": float, "max_output_length": int,
            "stop_rule": str}


# How `main` reports bad input (a ValueError or OSError): one line on stderr, exit status 2.
_ERROR_PREFIX = "python -m keras_rnmt.export: error: "


def _run_export_process(command, env):
    """Run the TensorFlow export process, passing its stderr through as it comes.

    Bad input (the process's one `_ERROR_PREFIX` line) is raised here as the `ValueError`
    it was, so `keras-rnmt export` reports it as one line under any backend; any other
    failure is a `RuntimeError` pointing at the process's log above it.
    """
    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    message = None
    for line in process.stderr:
        if line.startswith(_ERROR_PREFIX):
            message = line[len(_ERROR_PREFIX):].rstrip("\n")
        else:
            sys.stderr.write(line)
    if process.wait() == 0:
        return
    if message is not None:
        raise ValueError(message)
    raise RuntimeError(f"The TensorFlow export process failed (exit status {process.returncode}; "
                       f"its log is above): {' '.join(command)}")


def main(argv=None):
    """`python -m keras_rnmt.export RUN_DIR PATH [--beam-size 5] ...`."""
    parser = argparse.ArgumentParser(
        prog="python -m keras_rnmt.export",
        description="Export a keras-rnmt run directory as a TensorFlow SavedModel.",
    )
    parser.add_argument("run_dir", help="run directory with best.keras and the tokenizers")
    parser.add_argument("path", help="SavedModel directory to write")
    parser.add_argument("--model-file", default="best.keras")
    parser.add_argument("--dtype-policy", default=None,
                        help="the Keras dtype policy the graph computes in (e.g. mixed_bfloat16)")
    for name, kind in _OPTIONS.items():
        parser.add_argument("--" + name.replace("_", "-"), type=kind, default=None)
    args = parser.parse_args(argv)
    options = {name: getattr(args, name) for name in _OPTIONS if getattr(args, name) is not None}
    try:
        export_run(args.run_dir, args.path, model_file=args.model_file,
                   dtype_policy=args.dtype_policy, **options)
    except (ValueError, OSError) as error:
        parser.exit(2, f"{_ERROR_PREFIX}{error}\n")
    if keras.backend.backend() == "tensorflow":  # else the subprocess said it
        print(f"SavedModel written to {args.path}")


if __name__ == "__main__":
    main()
