"""Training throughput on SB: ours under TensorFlow, JAX and PyTorch vs JoeyNMT 2.3.0, one go.

    python benchmarks/train_throughput.py                    # everything (about 40 min here)
    python benchmarks/train_throughput.py --backends jax --no-joeynmt --steps 50
    python benchmarks/train_throughput.py --backends tensorflow tensorflow:mixed_bfloat16
    python benchmarks/train_throughput.py --backends jax jax:matmul_precision=bfloat16
    python benchmarks/train_throughput.py --no-joeynmt --steps 2 --warmup 1 \
        --set embedding_dim=8 encoder_units=8 decoder_units=16 max_vocabulary=200  # smoke

Prints target tokens/s per backend (`train_worker.py`: 200 timed `model.fit` steps after 20
warm-up steps, every batch shape compiled first), JoeyNMT's own "Tokens per Sec" (mean of
its 50-step log windows after the first, from `joeynmt_peer.py`), the ratio ours/JoeyNMT,
and our achieved FLOP/s as a fraction of the numpy float32 2048x2048 matmul peak measured
by this script. Run it on a quiet machine: the processes run one after the other.
A backend written `BACKEND:POLICY` trains under that Keras dtype policy (`mixed_bfloat16`,
`mixed_float16`); FLOP/s are counted the same way whatever the precision.
"""

import argparse
import os
import statistics
import subprocess
import sys

from sb import exit_on_sigterm, matmul_peak, report, result_line, worker_env

HERE = os.path.dirname(os.path.abspath(__file__))


def run_worker(backend, steps, warmup, settings=(), extra=()):
    """Run `train_worker.py` under `backend`; returns its RESULT dict."""
    env = worker_env(KERAS_BACKEND=backend)
    command = [sys.executable, os.path.join(HERE, "train_worker.py"), "--steps", str(steps),
               "--warmup", str(warmup), *extra]
    if settings:
        command += ["--set", *settings]
    process = subprocess.run(command, env=env, capture_output=True, text=True, cwd=HERE)
    return result_line(process, f"{backend} worker")


def backend_settings(variant):
    """The config overrides of a `--backends` entry's part after the colon: a dtype policy
    name, or comma-separated KEY=VALUE pairs."""
    if not variant:
        return []
    if "=" in variant:
        return variant.split(",")
    return [f"dtype_policy={variant}"]


def joeynmt_rate(run, skip_first=1):
    """JoeyNMT's training tokens/s: mean of its log windows after the first `skip_first`."""
    windows = [rate for _, rate in run["train_windows"][skip_first:]]
    return statistics.mean(windows), len(windows)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--backends", nargs="*", default=["tensorflow", "jax", "torch"],
                        help="BACKEND, BACKEND:DTYPE_POLICY (e.g. torch:mixed_bfloat16) or "
                             "BACKEND:KEY=VALUE[,KEY=VALUE] (e.g. jax:matmul_precision=bfloat16)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="SB overrides for our model (e.g. bucket_width=8)")
    parser.add_argument("--no-joeynmt", action="store_true", help="skip the peer")
    parser.add_argument("--retrain-joeynmt", action="store_true",
                        help="train JoeyNMT again even if benchmarks/work/joeynmt has a run")
    parser.add_argument("--json", default="", help="also write all figures to this file")
    args = parser.parse_args(argv)

    peak = matmul_peak()
    print(f"numpy float32 matmul peak (2048x2048): {peak / 1e9:.1f} GFLOP/s", flush=True)
    figures = {"matmul_peak_gflop_per_second": round(peak / 1e9, 1), "ours": {}}
    for backend in args.backends:
        name, _, variant = backend.partition(":")
        settings = list(args.set) + backend_settings(variant)
        result = run_worker(name, args.steps, args.warmup, settings)
        # Significant figures, not decimals: a smoke run's tiny model stays above 0.
        result["fraction_of_peak"] = float(f"{result['gflop_per_second'] * 1e9 / peak:.3g}")
        figures["ours"][backend] = result
        print(f"ours/{backend}: {result['target_tokens_per_second']:.0f} target tok/s, "
              f"{result['gflop_per_second']:.1f} GFLOP/s = "
              f"{100 * result['fraction_of_peak']:.0f}% of peak "
              f"(padding {100 * result['padding_fraction']:.0f}%, "
              f"{result['parameters']:,} parameters)", flush=True)
    if not args.no_joeynmt:
        from joeynmt_peer import train_one_epoch

        run = train_one_epoch(reuse=not args.retrain_joeynmt)
        rate, windows = joeynmt_rate(run)
        figures["joeynmt"] = {"target_tokens_per_second": round(rate, 1), "windows": windows,
                              "parameters": run.get("parameters"), "log": run["log"],
                              "learning_rates": run["learning_rates"],
                              "reused_earlier_run": run["reused"]}
        print(f"JoeyNMT 2.3.0: {rate:.0f} target tok/s (mean of {windows} 50-step windows; "
              f"{run.get('parameters', 0):,} parameters; log {run['log']})", flush=True)
        for backend, result in figures["ours"].items():
            ratio = result["target_tokens_per_second"] / rate
            result["ratio_to_joeynmt"] = round(ratio, 2)
            print(f"ratio ours/{backend} : JoeyNMT = {ratio:.2f}x (target 3x)")
    # The peak is measured again at the end: a loaded machine shows as a drop.
    figures["matmul_peak_gflop_per_second_after"] = round(matmul_peak() / 1e9, 1)
    report(figures, args.json)


if __name__ == "__main__":
    exit_on_sigterm()
    main()
