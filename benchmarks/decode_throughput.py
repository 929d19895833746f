"""Decoding throughput on test2016 (beam 5, batch 64): ours per backend and as a SavedModel
vs JoeyNMT 2.3.0, each with a model trained one epoch (460 updates) on the same data.

    python benchmarks/decode_throughput.py                   # about 30 min here
    python benchmarks/decode_throughput.py --no-joeynmt --run-dir /tmp/d \
        --saved-model /tmp/d_saved --train-steps 2 --train-warmup 1 --sentences 64 \
        --set embedding_dim=8 encoder_units=8 decoder_units=16 max_vocabulary=200  # smoke

1. Our model: `train_worker.py` under JAX, 460 updates of SB (20 warm-up + 440 timed),
   saved as a run directory `benchmarks/work/ours_epoch1` (reused when present).
2. `decode_worker.py` under TensorFlow (plain and with XLA), JAX and PyTorch: the 1,000
   test2016 sentences, one compiling pass, then a timed pass (sentences/s).
3. `keras-rnmt export` to `saved_models/bench_epoch1`, then `serve_worker.py` times it with
   plain TensorFlow in a process that never imports keras_rnmt: batches of 64 raw strings
   in file order, then in batches of similar length (a client that sorts its requests),
   and single-sentence latency (median, 95th percentile).
   `--dtype-policy mixed_bfloat16` decodes ours (2 and 3) in bfloat16 from the same float32
   weights (`saved_models/bench_epoch1_mixed_bfloat16`); JoeyNMT stays float32.
4. JoeyNMT: `joeynmt_peer.train_one_epoch()` (the SB yaml, 460 updates; reused from
   `train_throughput.py` when present), then `joeynmt test` with its best checkpoint times
   its beam-5 decode of test2016 in this run (`joeynmt_peer.decode_test()`).
"""

import argparse
import os
import subprocess
import sys

from sb import ROOT, data_dir, exit_on_sigterm, report, result_line, worker_env
from train_throughput import run_worker

HERE = os.path.dirname(os.path.abspath(__file__))
RUN_DIR = os.path.join(HERE, "work", "ours_epoch1")
SAVED = os.path.join(ROOT, "saved_models", "bench_epoch1")


def decode(backend, run_dir, stop_rule, dtype_policy="", sentences=0):
    """`decode_worker.py` under `backend`: "tensorflow", "jax", "torch", "tensorflow:xla"
    (the search compiled with XLA) or "jax:matmul_precision=bfloat16" (or torch:...)."""
    name, _, variant = backend.partition(":")
    options = {"": [], "xla": ["--jit-compile"],
               "matmul_precision=bfloat16": ["--matmul-precision", "bfloat16"]}
    if variant not in options:
        raise ValueError(f"Unknown backend variant {backend!r}: only 'tensorflow:xla' and "
                         "'jax:matmul_precision=bfloat16' (or torch:)")
    env = worker_env(KERAS_BACKEND=name)
    process = subprocess.run([sys.executable, os.path.join(HERE, "decode_worker.py"), run_dir,
                              "--stop-rule", stop_rule, "--dtype-policy", dtype_policy,
                              "--sentences", str(sentences)] + options[variant],
                             env=env, capture_output=True, text=True, cwd=HERE)
    return result_line(process, f"{backend} decode")


def export_and_serve(run_dir, path, stop_rule, dtype_policy="", sentences=0,
                     max_output_length=0):
    keras_rnmt = os.path.join(os.path.dirname(sys.executable), "keras-rnmt")
    env = dict(os.environ, KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2")
    options = ["--dtype-policy", dtype_policy] if dtype_policy else []
    if max_output_length:
        options += ["--max-output-length", str(max_output_length)]
    process = subprocess.run([keras_rnmt, "export", run_dir, path, "--beam-size", "5",
                              "--stop-rule", stop_rule, *options],
                             env=env, capture_output=True, text=True)
    if process.returncode:
        raise SystemExit("export failed:\n" + process.stdout[-2000:] + process.stderr[-4000:])
    process = subprocess.run([sys.executable, os.path.join(HERE, "serve_worker.py"), path,
                              data_dir(), "--sentences", str(sentences)],
                             env=env, capture_output=True, text=True, cwd="/")
    return result_line(process, "SavedModel serving")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", nargs="*",
                        default=["tensorflow", "tensorflow:xla", "jax", "torch"],
                        help="tensorflow:xla = TensorFlow with the search compiled by XLA; "
                             "jax:matmul_precision=bfloat16 = JAX with bfloat16 matmul operands")
    parser.add_argument("--stop-rule", default="current",
                        help="beam search's stop rule for ours: current (the default, as "
                             "JoeyNMT's) or bound (exact)")
    parser.add_argument("--dtype-policy", default="",
                        help="decode ours (and the SavedModel's graph) in this Keras dtype "
                             "policy, e.g. mixed_bfloat16 (default float32; JoeyNMT: float32)")
    parser.add_argument("--no-saved-model", action="store_true")
    parser.add_argument("--max-output-length", type=int, default=0,
                        help="the SavedModel's longest output (default: the export's, 512; "
                             "test2016 outputs stay under 80 tokens)")
    parser.add_argument("--no-joeynmt", action="store_true")
    parser.add_argument("--retrain", action="store_true", help="train both models again")
    parser.add_argument("--run-dir", default=RUN_DIR,
                        help="our trained run (trained here first when it has no best.keras)")
    parser.add_argument("--saved-model", default=SAVED, help="where to export it")
    parser.add_argument("--train-steps", type=int, default=440,
                        help="timed updates when training ours")
    parser.add_argument("--train-warmup", type=int, default=20,
                        help="untimed updates before them")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="SB overrides for training ours (a smoke test: a tiny model)")
    parser.add_argument("--sentences", type=int, default=0,
                        help="decode only the first N test2016 sentences (0 = all 1,000)")
    parser.add_argument("--json", default="", help="also write all figures to this file")
    args = parser.parse_args(argv)
    if args.sentences and not args.no_joeynmt:
        parser.error("--sentences times part of test2016, JoeyNMT all of it: add --no-joeynmt")

    figures = {"ours": {}}
    if args.retrain or not os.path.exists(os.path.join(args.run_dir, "best.keras")):
        training = run_worker("jax", args.train_steps, args.train_warmup, args.set,
                              extra=["--run-dir", args.run_dir])
        print(f"ours: trained {args.train_steps + args.train_warmup} updates under JAX in "
              f"{training['seconds']:.0f} s timed "
              f"({training['target_tokens_per_second']:.0f} tok/s)", flush=True)
        figures["ours_training"] = training
    for backend in args.backends:
        result = decode(backend, args.run_dir, args.stop_rule, args.dtype_policy,
                        args.sentences)
        figures["ours"][backend] = result
        print(f"ours/{backend}: {result['sentences_per_second']:.1f} sentences/s "
              f"(first pass with compilation {result['first_pass_seconds']:.0f} s; "
              f"BLEU {result['tokenised_bleu']:.2f}, "
              f"{result['mean_output_tokens']:.1f} tokens/output)", flush=True)
    if not args.no_saved_model:
        saved = args.saved_model + ("_" + args.dtype_policy if args.dtype_policy else "")
        result = export_and_serve(args.run_dir, saved, args.stop_rule, args.dtype_policy,
                                  args.sentences, args.max_output_length)
        figures["saved_model"] = result
        print(f"SavedModel (plain TensorFlow): {result['sentences_per_second']:.1f} sentences/s "
              f"in batches of 64 ({result['length_sorted_sentences_per_second']:.1f} in "
              f"batches of similar length, same outputs: "
              f"{result['length_sorted_outputs_equal']}); single-sentence latency p50 {result['latency_ms_p50']:.0f} ms, "
              f"p95 {result['latency_ms_p95']:.0f} ms", flush=True)
    if not args.no_joeynmt:
        from joeynmt_peer import decode_test, mean_output_tokens, train_one_epoch

        trained = train_one_epoch(reuse=not args.retrain)
        run = decode_test()  # timed now, beside ours, not taken from the training run
        rate = 1000 / run["test_decode_seconds"]
        length = mean_output_tokens()
        figures["joeynmt"] = {"sentences_per_second": round(rate, 1),
                              "output_tokens_per_second": round(rate * length, 1),
                              "mean_output_tokens": round(length, 2),
                              "seconds": run["test_decode_seconds"],
                              "tokenised_bleu": run.get("test_bleu"), "log": run["log"],
                              "trained_at_learning_rates": trained["learning_rates"]}
        print(f"JoeyNMT 2.3.0: {rate:.1f} sentences/s ({run['test_decode_seconds']:.1f} s; "
              f"BLEU {run.get('test_bleu')}, {length:.1f} tokens/output)", flush=True)
        # Under-trained models differ in output length, and beam search runs until the
        # longest hypothesis of a batch ends: output tokens/s is the like-for-like figure.
        ours_length = figures["ours"][args.backends[0]]["mean_output_tokens"] if args.backends \
            else None
        for name, result in list(figures["ours"].items()) + [
                ("saved_model", figures.get("saved_model"))]:
            if result:
                ratio = result["sentences_per_second"] / rate
                result["ratio_to_joeynmt"] = round(ratio, 2)
                line = f"ratio ours/{name} : JoeyNMT = {ratio:.2f}x sentences/s"
                if ours_length:
                    token_ratio = ratio * ours_length / length
                    result["output_token_ratio_to_joeynmt"] = round(token_ratio, 2)
                    line += f", {token_ratio:.2f}x output tokens/s"
                print(line + " (target 3x)")
    report(figures, args.json)


if __name__ == "__main__":
    exit_on_sigterm()
    main()
