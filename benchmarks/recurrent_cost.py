"""The cost of recurrent attention (k=5) relative to Bahdanau, on SB and by sentence length.

    python benchmarks/recurrent_cost.py                      # about 20 min here
    python benchmarks/recurrent_cost.py --backend tensorflow --lengths 10 20
    python benchmarks/recurrent_cost.py --steps 2 --warmup 1 --lengths 6 --length-steps 2 \
        --set embedding_dim=8 encoder_units=8 decoder_units=16 max_vocabulary=200  # smoke

Both models are SB with only the attention changed (`attention=recurrent window=5` adds
a dynamic memory, an LSTM over the 2k+1 = 11 previous attention weights, per source word;
Yang et al. Eq. 10-13). Figures from `train_worker.py` under one backend:

- SB: real Multi30k batches, `--steps` timed steps after `--warmup`.
- lengths: synthetic batches (random in-vocabulary ids) whose sources and targets all have
  exactly L tokens, L in `--lengths`; `--length-steps` timed steps each.

Prints target tokens/s, the time ratio recurrent/Bahdanau (target <= 1.33) and the
worker's peak resident memory (MiB, the whole process).
"""

import argparse

from sb import report
from train_throughput import run_worker

MODELS = {"bahdanau": [], "recurrent-k5": ["attention=recurrent", "window=5"]}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="jax")
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--lengths", nargs="*", type=int, default=[10, 20, 40, 80])
    parser.add_argument("--length-steps", type=int, default=10)
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="SB overrides for both models (e.g. memory_units=128)")
    parser.add_argument("--json", default="", help="also write all figures to this file")
    args = parser.parse_args(argv)

    rows = []
    settings = [("SB", args.steps, args.warmup, [])]
    settings += [(f"L={n}", args.length_steps, 2, ["--length", str(n)]) for n in args.lengths]
    for label, steps, warmup, extra in settings:
        row = {"setting": label}
        for name, overrides in MODELS.items():
            result = run_worker(args.backend, steps, warmup, args.set + overrides, extra)
            row[name] = result
            print(f"{label} {name}: {result['target_tokens_per_second']:.0f} tok/s, "
                  f"peak memory {result['peak_host_memory_mb']:.0f} MiB", flush=True)
        ratio = (row["bahdanau"]["target_tokens_per_second"]
                 / row["recurrent-k5"]["target_tokens_per_second"])
        row["time_ratio"] = round(ratio, 3)
        print(f"{label}: recurrent k=5 takes {ratio:.2f}x Bahdanau's time (target <= 1.33)",
              flush=True)
        rows.append(row)
    report({"backend": args.backend, "rows": rows}, args.json)


if __name__ == "__main__":
    main()
