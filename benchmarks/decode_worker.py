"""Time beam search of test2016 with a run directory's model under one backend.

Run by `decode_throughput.py` (one process per backend, `KERAS_BACKEND` set by it):

    KERAS_BACKEND=jax python benchmarks/decode_worker.py benchmarks/work/ours_epoch1

Translates the 1,000 test2016 sentences twice with `Translator` (beam 5, batch 64): the
first pass compiles the search for every batch shape, the second is timed. Prints one
`RESULT {json}` line: sentences/s of the timed pass, the first pass's seconds, mean output
length and tokenised BLEU (so models trained alike can be compared).
"""

import argparse
import json
import os
import time

from sb import data_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--stop-rule", default="current", help="beam search's stop rule")
    parser.add_argument("--dtype-policy", default="",
                        help="the Keras dtype policy to load the model under (e.g. "
                             "mixed_bfloat16; default: float32)")
    parser.add_argument("--jit-compile", action="store_true",
                        help="TensorFlow: compile the search with XLA (Translator's jit_compile)")
    parser.add_argument("--sentences", type=int, default=0,
                        help="only the first N test2016 sentences (0 = all)")
    parser.add_argument("--matmul-precision", default="float32",
                        help="JAX: 'bfloat16' searches with bfloat16 matmul operands and float32 "
                             "sums (keras_rnmt.matmul_precision)")
    args = parser.parse_args(argv)
    import keras
    import sacrebleu

    from keras_rnmt.malloc import keep_freed_memory_for_backend
    from keras_rnmt.matmul_precision import matmul_precision, set_matmul_precision
    from keras_rnmt.translator import Translator

    # As `keras-rnmt translate` does (keras_rnmt/malloc.py); under JAX, CPU dispatch turns
    # synchronous too, so the search decodes as the CLI would.
    keeps_freed_memory = keep_freed_memory_for_backend()
    set_matmul_precision(args.matmul_precision)

    with open(os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.en"), encoding="utf-8") as f:
        sources = f.read().splitlines()
    with open(os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.de"), encoding="utf-8") as f:
        references = f.read().splitlines()
    if args.sentences:
        sources, references = sources[:args.sentences], references[:args.sentences]
    translator = Translator.from_run(args.run_dir, beam_size=args.beam_size,
                                     batch_size=args.batch_size, stop_rule=args.stop_rule,
                                     dtype_policy=args.dtype_policy or None,
                                     jit_compile=args.jit_compile)
    start = time.perf_counter()
    translator.translate(sources)
    first = time.perf_counter() - start
    start = time.perf_counter()
    outputs = translator.translate(sources)
    seconds = time.perf_counter() - start
    texts = [t.text for t in outputs]
    bleu = sacrebleu.corpus_bleu(texts, [references], tokenize="none")
    result = {
        "backend": keras.backend.backend(),
        "dtype_policy": translator.model.dtype_policy.name,
        "matmul_precision": matmul_precision(),
        "stop_rule": args.stop_rule,
        "jit_compile": args.jit_compile,
        "keeps_freed_memory": keeps_freed_memory,
        "sentences": len(sources),
        "seconds": round(seconds, 2),
        "sentences_per_second": round(len(sources) / seconds, 1),
        "first_pass_seconds": round(first, 1),
        "mean_output_tokens": round(sum(len(t.tokens) for t in outputs) / len(outputs), 2),
        "tokenised_bleu": round(bleu.score, 2),
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
