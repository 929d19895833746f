"""The cost of a beam step's bookkeeping on this CPU, one backend per run.

    KERAS_BACKEND=tensorflow python benchmarks/beam_step_cost.py   # seconds
    python benchmarks/beam_step_cost.py --batch 4 --beams 2 --vocab 58   # smoke

Random inputs of the decoding benchmark's shape (B=64 sentences, K=5 beams, SB's 7,859
target words), each op compiled for the backend (tf.function, jax.jit; eager PyTorch), best
of 3 × 50 calls. Prints milliseconds per step for: the vocabulary log-softmax of the step
(`search_log_probs`), the 2K candidates as `beam_search` chose them before `beam_top_k`
(mask non-</s> words at the length limit over (B, K, V), add the beam scores, `top_k` over
(B, K·V)), and as it chooses them now (`expand_beams`: `beam_top_k`, then the limit on the
2K candidates).
"""

import argparse
import time

import keras
import numpy as np
from keras import ops

from keras_rnmt.models.search_log_probs import search_log_probs
from keras_rnmt.search.top_k import expand_beams

EOS = 3


def full_top_k(alive, log_probs, limits, step):
    """The candidates as `beam_search` picked them before `beam_top_k`."""
    batch, beams, vocab_size = ops.shape(log_probs)
    at_limit = (step >= limits - 1)[:, None, None]
    not_eos = (ops.arange(vocab_size, dtype="int32") != EOS)[None, None, :]
    log_probs = ops.where(ops.logical_and(at_limit, not_eos), float("-inf"), log_probs)
    scores = ops.reshape(alive[:, :, None] + log_probs, (batch, -1))
    return ops.top_k(scores, k=2 * beams, sorted=True)


def chunked_top_k(alive, log_probs, limits, step):
    """The candidates as `beam_search` picks them now (`expand_beams`)."""
    beams = ops.shape(log_probs)[1]
    return expand_beams(alive, log_probs, step >= limits - 1, EOS, 2 * beams)


def compile_fn(function):
    backend = keras.backend.backend()
    if backend == "tensorflow":
        import tensorflow as tf

        return tf.function(function)
    if backend == "jax":
        import jax

        return jax.jit(function)
    return function


def milliseconds(function, *args, calls=50):
    function(*args)
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for _ in range(calls):
            result = function(*args)
        ops.convert_to_numpy(keras.tree.flatten(result)[0])
        best = min(best, (time.perf_counter() - start) / calls * 1000)
    return best


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--beams", type=int, default=5)
    parser.add_argument("--vocab", type=int, default=7859)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    shape = (args.batch, args.beams, args.vocab)
    logits = ops.convert_to_tensor(rng.normal(size=shape).astype("float32") * 3)
    log_probs = ops.convert_to_tensor(np.log(rng.dirichlet(np.full(args.vocab, 0.1),
                                                           size=shape[:2])).astype("float32"))
    alive = ops.convert_to_tensor(-5 * rng.random(shape[:2]).astype("float32"))
    limits = ops.convert_to_tensor(rng.integers(5, 40, size=args.batch).astype("int32"))
    step = ops.convert_to_tensor(np.int32(20))
    before = compile_fn(full_top_k)(alive, log_probs, limits, step)
    after = compile_fn(chunked_top_k)(alive, log_probs, limits, step)
    same = np.array_equal(ops.convert_to_numpy(before[0]), ops.convert_to_numpy(after[0]))
    flat_logits = ops.reshape(logits, (-1, args.vocab))
    print(f"{keras.backend.backend()}, B={args.batch} K={args.beams} V={args.vocab}, ms per step:")
    print(f"  log-softmax (search_log_probs): "
          f"{milliseconds(compile_fn(search_log_probs), flat_logits):.2f}")
    print(f"  candidates, full top-k:         "
          f"{milliseconds(compile_fn(full_top_k), alive, log_probs, limits, step):.2f}")
    print(f"  candidates, beam_top_k:         "
          f"{milliseconds(compile_fn(chunked_top_k), alive, log_probs, limits, step):.2f}"
          f"  (same scores: {same})")


if __name__ == "__main__":
    main()
