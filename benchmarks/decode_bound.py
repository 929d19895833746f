"""How fast beam search could decode test2016 if it ran nothing but the model's steps.

    KERAS_BACKEND=jax python benchmarks/decode_bound.py benchmarks/work/ours_epoch1

An upper bound to read the decoding figures of `decode_throughput.py` against:

1. `Translator` (beam 5, batch 64) translates test2016 twice (the first pass compiles) and
   the second pass is timed, as in `decode_worker.py`. Meanwhile the beam rows the search
   computed are counted (rows × steps of every chunk that `shrinking_beam_search`, or
   under TensorFlow `graph_shrinking_beam_search`, runs).
2. The model's search step alone, compiled, on 64 sentences × 5 beams with sources of the
   test set's median length, and the output projection's matmul at its shape, best of
   3 × 20 calls: milliseconds per row.
3. The rows the outputs need: a best hypothesis of L tokens (with </s>) needs its first step
   on one row and L - 1 steps on K rows. The bound is the sentences over those rows times
   the time per row: no search bookkeeping, no rows of sentences already done, no padding,
   every step at the full batch's speed per row.

Prints one `RESULT {json}` line. Smoke run: `--sentences 64`.
"""

import argparse
import json
import os
import time

import numpy as np
from sb import data_dir


def best_time(fn, repeats=3, calls=20):
    """Seconds per call, best of `repeats` rounds of `calls` calls."""
    from keras import ops

    ops.convert_to_numpy(fn())  # compile
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            out = fn()
        ops.convert_to_numpy(out)
        best = min(best, (time.perf_counter() - start) / calls)
    return best


def count_rows(translator_module):
    """Wrap the translator's beam searches to count the beam rows they compute.

    The Python-driven search (`shrinking_beam_search`) is counted from the host; the one
    TensorFlow runs as a graph (`graph_shrinking_beam_search`) adds its rows to a variable
    from inside the graph.
    """
    import keras

    from keras_rnmt.search import programs

    counts = {"rows": 0}
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        # Created here, eagerly: `counting_graph` runs while a search is traced.
        counts["variable"] = tf.Variable(0, dtype=tf.int64, trainable=False)
    original = translator_module.shrinking_beam_search
    original_graph = programs.graph_shrinking_beam_search

    def counting(start, advance, beam_size, **options):
        def counted_start():
            carry = start()
            counts["rows"] += int(carry.alive_log_probs.shape[0])  # step 0: one row each
            return carry

        def counted_advance(carry, until):
            before, rows = int(carry.step), int(carry.alive_log_probs.shape[0])
            carry = advance(carry, until)
            counts["rows"] += rows * beam_size * (int(carry.step) - before)
            return carry

        return original(counted_start, counted_advance, beam_size, **options)

    def counting_graph(start, advance, beam_size, **options):
        import tensorflow as tf

        variable = counts["variable"]

        def counted(carry, rows):
            with tf.control_dependencies([variable.assign_add(tf.cast(rows, tf.int64))]):
                return tf.nest.map_structure(tf.identity, carry)

        def counted_start():
            carry = start()
            return counted(carry, tf.shape(carry.alive_log_probs)[0])

        def counted_advance(carry, until):
            before, rows = carry.step, tf.shape(carry.alive_log_probs)[0]
            carry = advance(carry, until)
            return counted(carry, rows * beam_size * (carry.step - before))

        return original_graph(counted_start, counted_advance, beam_size, **options)

    translator_module.shrinking_beam_search = counting
    programs.graph_shrinking_beam_search = counting_graph
    return counts


def reset(counts):
    counts["rows"] = 0
    if "variable" in counts:
        counts["variable"].assign(0)


def rows_of(counts):
    return counts["rows"] + (int(counts["variable"].numpy()) if "variable" in counts else 0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--sentences", type=int, default=0,
                        help="only the first N test2016 sentences (0 = all)")
    args = parser.parse_args(argv)
    import keras
    from keras import ops

    import keras_rnmt.translator as translator_module
    from keras_rnmt.search.beam_helpers import add_beam_dim, flatten_beam_dim
    from keras_rnmt.search.compiled import compile_search

    with open(os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.en"), encoding="utf-8") as f:
        sources = f.read().splitlines()
    if args.sentences:
        sources = sources[:args.sentences]
    beam, batch = args.beam_size, args.batch_size
    if beam < 2:
        parser.error("--beam-size must be at least 2 (greedy search is not chunked)")
    translator = translator_module.Translator.from_run(args.run_dir, beam_size=beam,
                                                       batch_size=batch)
    counts = count_rows(translator_module)
    translator.translate(sources)
    reset(counts)
    start = time.perf_counter()
    outputs = translator.translate(sources)
    seconds = time.perf_counter() - start
    lengths = np.array([len(t.ids) for t in outputs])  # one id per step, </s> last
    needed_rows = int(np.sum(1 + beam * (lengths - 1)))

    # One search step of the full batch, compiled as `Translator` compiles its search.
    model = translator.model
    length = int(np.median([len(ids) for ids in translator._encode_all(sources)]))
    rng = np.random.default_rng(0)
    vocab = model.config.target_vocab_size
    source = rng.integers(4, model.config.source_vocab_size, (batch, length)).astype("int32")
    state = model.search_state(source)
    state = keras.tree.map_structure(lambda x: flatten_beam_dim(add_beam_dim(x, beam)), state)
    tokens = rng.integers(4, vocab, (batch * beam,)).astype("int32")
    # With the constants `Translator` computes once for its searches (the input table).
    constants = model.search_constants()
    step = compile_search(lambda t, s, c: model.search_step(t, s, constants=c)[0])
    step_seconds = best_time(lambda: step(model, tokens, state, constants))
    # The output projection: the (width, V) kernel.
    width = next(int(v.shape[0]) for v in model.weights
                 if len(v.shape) == 2 and int(v.shape[1]) == vocab)
    x = rng.standard_normal((batch * beam, width)).astype("float32")
    w = rng.standard_normal((width, vocab)).astype("float32")
    matmul = compile_search(lambda a, b: ops.matmul(a, b))
    projection_seconds = best_time(lambda: matmul(model, x, w))

    row_seconds = step_seconds / (batch * beam)
    bound = len(sources) / (needed_rows * row_seconds)
    result = {
        "backend": keras.backend.backend(),
        "sentences": len(sources),
        "sentences_per_second": round(len(sources) / seconds, 1),
        "bound_sentences_per_second": round(bound, 1),
        "of_bound": round(len(sources) / seconds / bound, 2),
        "step_ms": round(step_seconds * 1000, 2),
        "projection_ms": round(projection_seconds * 1000, 2),
        "projection_gflops": round(2 * batch * beam * width * vocab / projection_seconds / 1e9,
                                   1),
        "source_length": length,
        "rows_computed": rows_of(counts),
        "rows_needed": needed_rows,
        "output_ids": int(np.sum(lengths)),
        "model_steps_seconds": round(rows_of(counts) * row_seconds, 2),
        "pass_seconds": round(seconds, 2),
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
