"""Choose a run's decoding settings on validation: checkpoint averaging and length penalty.

    python benchmarks/decode_choices.py benchmarks/work/quality/recurrent-k5-plateau-seed1 \
        --average 2 3 4 --alphas 0.6 1.0 1.4

For each model — the run's `best.keras` and, for every N of `--average`, the mean of its
last N epoch checkpoints (`keras_rnmt.training.checkpoints`; the run trained with
`keep_checkpoints`) — and each GNMT length penalty α of `--alphas`, beam-5 search on
Multi30k val (1,014 sentences) gives tokenised lowercased BLEU. The setting with the best
validation BLEU is then scored on test2016 the way `quality.py` scores a run (beam 5 and 12,
with and without UNK replacement, tokenised and detokenised), next to the run's default
(best.keras, α = 1.0, beam 5), so the test set picks nothing. Prints a table; `--json` writes
every figure, and the choice's beam-5 test outputs to `test_hypotheses_chosen.txt` beside it.

    python benchmarks/decode_choices.py --table benchmarks/runs/*-plateau-seed*/decode_choices.json

prints the chosen settings' test2016 BLEU over seeds (mean ± sd per model) from such files.
"""

import argparse
import json
import os

from quality import SETTING_NAMES, by_run_name, mean_sd, read, score
from sb import ROOT  # noqa: F401  (puts the repository on sys.path)


def bleu(run_dir, model_file, alpha, sources, references, beam_size):
    from keras_rnmt.evaluation import corpus_scores
    from keras_rnmt.translator import Translator

    translator = Translator.from_run(run_dir, model_file=model_file, beam_size=beam_size,
                                     length_penalty=alpha)
    return round(corpus_scores(translator(sources), references, tokenized=True).bleu, 2)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", nargs="?")
    parser.add_argument("--average", nargs="*", type=int, default=[],
                        help="also try the mean of the last N epoch checkpoints, per N")
    parser.add_argument("--alphas", nargs="*", type=float, default=[0.6, 1.0, 1.4])
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--json", default=None, help="write the figures here")
    parser.add_argument("--table", nargs="*", metavar="JSON",
                        help="only tabulate these --json files over seeds")
    args = parser.parse_args(argv)
    if args.table:
        return print(table(args.table))
    if not args.run_dir:
        parser.error("give a run directory (or --table)")
    from keras_rnmt.training.checkpoints import average_checkpoints

    models = {"best": "best.keras"}
    for n in args.average:
        path, epochs = average_checkpoints(args.run_dir, last=n, output=f"averaged-last{n}.keras")
        models[f"average {epochs[0]}-{epochs[-1]}"] = os.path.basename(path)
    val = read("val.lc.norm.tok.en"), read("val.lc.norm.tok.de")
    test = read("test_2016_flickr.lc.norm.tok.en"), read("test_2016_flickr.lc.norm.tok.de")
    grid = {}
    print(f"| model | {' | '.join(f'α={a:g}' for a in args.alphas)} |  (val BLEU, beam "
          f"{args.beam_size})\n|---{'|---' * len(args.alphas)}|", flush=True)
    for name, model_file in models.items():
        row = [bleu(args.run_dir, model_file, a, *val, args.beam_size) for a in args.alphas]
        grid.update({(name, a): b for a, b in zip(args.alphas, row)})
        print(f"| {name} | {' | '.join(f'{b:.2f}' for b in row)} |", flush=True)
    chosen = max(grid, key=grid.get)
    outputs = {}
    scores = score(args.run_dir, model_file=models[chosen[0]], length_penalty=chosen[1],
                   hypotheses=outputs)["scores"]
    # The default (best.keras, α = 1) needs its own test pass only when it was not chosen.
    default_test = (scores[f"beam{args.beam_size}"]["tokenised_bleu"]
                    if chosen == ("best", 1.0) and f"beam{args.beam_size}" in scores
                    else bleu(args.run_dir, "best.keras", 1.0, *test, args.beam_size))
    print(f"\nchosen on val: {chosen[0]}, α={chosen[1]:g} (val {grid[chosen]:.2f})")
    print(f"test2016 BLEU beam {args.beam_size}: default (best, α=1) {default_test:.2f}; chosen: "
          + ", ".join(f"{name} {row['tokenised_bleu']:.2f}" for name, row in scores.items()))
    if args.json:
        # Beside the JSON, as `significance.py --hypotheses test_hypotheses_chosen.txt` reads it.
        with open(os.path.join(os.path.dirname(args.json), "test_hypotheses_chosen.txt"), "w",
                  encoding="utf-8") as f:
            f.write("".join(text + "\n" for text in outputs[f"beam{args.beam_size}"]))
        with open(args.json, "w") as f:
            json.dump({"run_dir": args.run_dir, "beam_size": args.beam_size,
                       "val": [{"model": m, "alpha": a, "bleu": b} for (m, a), b in grid.items()],
                       "chosen": {"model": chosen[0], "model_file": models[chosen[0]],
                                  "alpha": chosen[1]},
                       "test_default": default_test,
                       "test_chosen": scores.get(f"beam{args.beam_size}", {}).get("tokenised_bleu"),
                       "test_chosen_scores": scores}, f, indent=2)


def table(paths):
    """Mean ± sd over seeds (runs named NAME-seedS) of the chosen settings' test2016 BLEU."""
    columns = SETTING_NAMES
    runs = by_run_name(paths)
    for record in (r for records in runs.values() for r in records):
        if "test_chosen_scores" not in record:
            raise ValueError(f"{record['run_dir']}: its decode_choices.json was written by an "
                             "older decode_choices.py (no test_chosen_scores): run it again")
    lines = ["| model | seeds | chosen (per seed) | best.keras beam5 | "
             + " | ".join(f"chosen {c}" for c in columns) + " |", "|---" * (4 + len(columns)) + "|"]
    for name, records in runs.items():
        chosen = "; ".join(f"{r['chosen']['model']} α={r['chosen']['alpha']:g}" for r in records)
        cells = [mean_sd([r["test_chosen_scores"][c]["tokenised_bleu"] for r in records])
                 for c in columns]
        default = mean_sd([r["test_default"] for r in records])
        lines.append(f"| {name} | {len(records)} | {chosen} | {default} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
