"""Time `model.fit` on SB batches under one backend; print one JSON line of figures.

Run by `train_throughput.py` (one process per backend, `KERAS_BACKEND` set by it):

    KERAS_BACKEND=jax python benchmarks/train_worker.py --steps 200 --warmup 20

The batches are the training pipeline's (`make_dataset`, shuffled, length-bucketed,
padded to bucket bounds); they are materialised first, so the timed steps measure the
model, not tokenisation. Every distinct batch shape is compiled before timing starts.
"""

import argparse
import json
import os
import time

from sb import matmul_peak, sb_config, training_flops


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="timed training steps")
    parser.add_argument("--warmup", type=int, default=20, help="untimed steps before")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="config overrides, e.g. attention=recurrent window=5")
    parser.add_argument("--length", type=int, default=0,
                        help="the length study: synthetic batches whose sources and targets "
                             "all have exactly this many tokens (random in-vocabulary ids, "
                             "</s> included); 0 = the real training batches")
    parser.add_argument("--run-dir", default="",
                        help="also save the trained model as RUN_DIR/best.keras with its "
                             "tokenizers and config.json (for decoding and export)")
    parser.add_argument("--peak", action="store_true", help="also measure the matmul peak")
    return parser.parse_args(argv)


def synthetic_batches(count, batch_size, length, source_vocabulary, target_vocabulary, seed):
    """`count` batches of (source, target_in, target_out), every sentence `length` tokens
    (`length - 1` random words then `</s>`; target_in starts with `<s>`)."""
    import numpy as np

    from keras_rnmt.data import BOS_ID, EOS_ID

    rng = np.random.default_rng(seed)
    batches = []
    for _ in range(count):
        source = rng.integers(4, source_vocabulary, (batch_size, length)).astype("int32")
        words = rng.integers(4, target_vocabulary, (batch_size, length - 1)).astype("int32")
        source[:, -1] = EOS_ID
        eos = np.full((batch_size, 1), EOS_ID, "int32")
        bos = np.full((batch_size, 1), BOS_ID, "int32")
        batches.append((source, np.concatenate([bos, words], 1), np.concatenate([words, eos], 1)))
    return batches


def peak_memory_mb():
    """The process's peak resident memory (ru_maxrss), MiB."""
    import resource

    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def compiled_model(config, source_vocab_size, target_vocab_size):
    """`(model_config, model)`: the config's model for vocabularies of these sizes,
    initialised and compiled with its optimizer, loss and token-accuracy metric, as the
    recipe trains it (`keras_rnmt/training/train.py`; JoeyNMT's training step counts its
    correct tokens too). The figures of RESULTS.md §1 before 2026-12-03 (night) were
    measured without the metric, which costs 0-3% of a JAX step (§1, "The token-accuracy
    metric in the timed step")."""
    from keras_rnmt.models import build_model
    from keras_rnmt.training.config import jit_compile_arg
    from keras_rnmt.training.losses import MaskedAccuracy, MaskedCrossEntropy
    from keras_rnmt.training.optimizers import get_optimizer, uniform_initialize

    model_config = config.model.replace(source_vocab_size=source_vocab_size,
                                        target_vocab_size=target_vocab_size)
    model = build_model(model_config)
    if config.uniform_init:
        uniform_initialize(model, config.uniform_init, seed=config.seed)
    model.compile(optimizer=get_optimizer(config.optimizer, config.learning_rate or None,
                                          config.clipnorm or None),
                  loss=MaskedCrossEntropy(config.label_smoothing), metrics=[MaskedAccuracy()],
                  jit_compile=jit_compile_arg(config.jit_compile))
    return model_config, model


def tensorflow_batches(batches):
    """`batches` of (source, target_in, target_out) arrays as a `tf.data.Dataset` of
    `((source, target_in), target_out)` tensors, in order, with tf.data's autotuning off.

    The dataset holds tensors already made, so there is nothing to tune; with autotuning on,
    about a third of the TensorFlow runs here (TensorFlow 2.21) stalled after the last step,
    inside `fit`'s return, until 10 ms x (2^n - 1) after the iterator was made (20.56 s for
    a 12 s pass), and the timed pass counted the stall as training (RESULTS.md §1,
    2026-11-25). `make_dataset` turns it off for the same reason (`without_autotuning`).
    """
    import functools

    import tensorflow as tf

    from keras_rnmt.data.pipeline import without_autotuning

    data = functools.reduce(lambda a, b: a.concatenate(b), [
        tf.data.Dataset.from_tensors(((s, ti), to)) for s, ti, to in batches])
    return without_autotuning(data)


def fit_batches(model, batches):
    """One `model.fit` pass over `batches` of (source, target_in, target_out) arrays,
    returning its `History` once the device has finished.

    Under TensorFlow the batches become a `tf.data.Dataset` of tensors, as training feeds
    them (`make_dataset`): fed from a Python generator, TensorFlow's input thread competes
    for the interpreter with the training loop, which cost 30-50% of its speed here and made
    its figure swing from run to run (RESULTS.md §1).
    """
    import keras

    if keras.backend.backend() == "tensorflow":
        data = tensorflow_batches(batches)
    else:
        def generator():
            for s, ti, to in batches:
                yield (s, ti), to
        data = generator()
    history = model.fit(data, steps_per_epoch=len(batches), epochs=1, verbose=0,
                        shuffle=False)
    float(keras.ops.convert_to_numpy(model.optimizer.iterations))  # wait for the device
    return history


def main(argv=None):
    args = parse_args(argv)
    import keras
    import numpy as np

    from keras_rnmt.data import make_dataset
    from keras_rnmt.malloc import keep_freed_memory_for_backend
    from keras_rnmt.matmul_precision import set_matmul_precision
    from keras_rnmt.training.train import prepare_data

    # As `keras-rnmt train` does (keras_rnmt/malloc.py); under JAX, CPU dispatch turns
    # synchronous too, so that the step's temporaries stay on the main heap.
    keeps_freed_memory = keep_freed_memory_for_backend()
    overrides = dict(item.split("=", 1) for item in args.set)
    config = sb_config(**overrides)
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(config.dtype_policy)
    set_matmul_precision(config.matmul_precision)
    if args.run_dir:
        os.makedirs(args.run_dir, exist_ok=True)
        with open(os.path.join(args.run_dir, "config.json"), "w") as f:
            json.dump(config.to_dict(), f, indent=2)
    splits, source_tokenizer, target_tokenizer = prepare_data(config, args.run_dir or None)
    total = args.warmup + args.steps
    if args.length:
        batches = synthetic_batches(total, config.batch_size, args.length,
                                    source_tokenizer.vocabulary_size(),
                                    target_tokenizer.vocabulary_size(), config.seed)
    else:
        dataset = make_dataset(*splits["train"], source_tokenizer, target_tokenizer,
                               batch_size=config.batch_size, bucket_width=config.bucket_width,
                               shuffle=True, seed=config.seed, pad_to_bucket=True,
                               repeat=True, shuffle_batches=False)
        # A repeated stream has no incomplete batches to spread (`shuffle_batches`); without
        # the batch shuffle these are the batches every recorded figure timed.
        batches = [tuple(np.asarray(x) for x in (s, ti, to))
                   for (s, ti), to in dataset.take(total).as_numpy_iterator()]
    model_config, model = compiled_model(config, source_tokenizer.vocabulary_size(),
                                         target_tokenizer.vocabulary_size())

    # Compile every shape the timed steps use, then the warm-up steps.
    seen, first_of_shape = set(), []
    for batch in batches:
        key = (batch[0].shape, batch[1].shape)
        if key not in seen:
            seen.add(key)
            first_of_shape.append(batch)
    start = time.perf_counter()
    fit_batches(model, first_of_shape + batches[:args.warmup])
    warmup_seconds = time.perf_counter() - start

    timed = batches[args.warmup:]
    start = time.perf_counter()
    fit_batches(model, timed)
    seconds = time.perf_counter() - start

    source_lengths = np.concatenate([(b[0] != 0).sum(1) for b in timed])
    target_lengths = np.concatenate([(b[2] != 0).sum(1) for b in timed])
    padded_target = sum(b[2].size for b in timed)
    flops = training_flops(model_config, source_lengths, target_lengths)
    result = {
        "backend": keras.backend.backend(),
        "jit_compile": bool(model.jit_compile),
        "matmul_precision": config.matmul_precision,
        "keeps_freed_memory": keeps_freed_memory,
        "attention": model_config.attention,
        "window": model_config.window,
        "steps": len(timed),
        "seconds": round(seconds, 2),
        "target_tokens": int(target_lengths.sum()),
        "target_tokens_per_second": round(float(target_lengths.sum()) / seconds, 1),
        "sentences_per_second": round(len(target_lengths) / seconds, 2),
        "padding_fraction": round(1 - float(target_lengths.sum()) / padded_target, 3),
        "gflop_per_second": float(f"{flops / seconds / 1e9:.4g}"),  # tiny models: > 0
        "mflop_per_target_token": round(flops / target_lengths.sum() / 1e6, 1),
        "parameters": int(model.count_params()),
        "compile_and_warmup_seconds": round(warmup_seconds, 1),
        "shapes": len(seen),
    }
    if args.length:
        result["length"] = args.length
    if args.run_dir:
        model.save(os.path.join(args.run_dir, "best.keras"))
        result["run_dir"] = args.run_dir
    result["peak_host_memory_mb"] = peak_memory_mb()
    if args.peak:
        result["matmul_peak_gflop_per_second"] = round(matmul_peak() / 1e9, 1)
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
