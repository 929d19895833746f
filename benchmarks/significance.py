"""Is recurrent attention's lead over Bahdanau on test2016 more than sampling noise?

    python benchmarks/significance.py                          # every tag with both models
    python benchmarks/significance.py --tags plateau --baseline bahdanau --system recurrent-k5

For every seed S that has both `benchmarks/runs/{baseline}-{tag}-seedS/test_hypotheses.txt`
and `.../{system}-{tag}-seedS/test_hypotheses.txt` (tag `none`: `{name}-seedS`) (beam 5, the run's best model, as
`quality.py` writes them), sacreBLEU's paired bootstrap resampling (Koehn, 2004; 1,000
resamples of the 1,000 test2016 sentences, tokenised BLEU against `lc.norm.tok`) gives both
systems' BLEU, its 95% confidence interval and the p-value of the system beating the
baseline by chance. Prints one markdown row per (tag, seed). A hypotheses file whose BLEU
differs from the run's `scores.json` (beam 5) was written by an older search (the 8-epoch
runs decoded with the exact stop rule at the end of training) and is flagged.
"""

import argparse
import glob
import json
import os
import re
import subprocess
import sys

from sb import data_dir

HERE = os.path.dirname(os.path.abspath(__file__))
RUNS = os.path.join(HERE, "runs")


def paired_bootstrap(reference, baseline, system, samples):
    """sacreBLEU's `--paired-bs`: [(score, ci), (score, ci, p_value)] of baseline and system."""
    sacrebleu = os.path.join(os.path.dirname(sys.executable), "sacrebleu")
    process = subprocess.run(
        [sacrebleu, reference, "-i", baseline, system, "-m", "bleu", "--tokenize", "none",
         "--paired-bs", "--paired-bs-n", str(samples), "--format", "json"],
        capture_output=True, text=True, check=True)
    rows = json.loads(process.stdout)
    return [row["BLEU"] for row in rows]


def seeds(name, tag):
    pattern = re.compile(re.escape(f"{name}{tag}-seed") + r"(\d+)$")
    found = (pattern.search(path) for path in glob.glob(os.path.join(RUNS, f"{name}{tag}-seed*")))
    return {int(match.group(1)) for match in found if match}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="bahdanau")
    parser.add_argument("--system", default="recurrent-k5")
    parser.add_argument("--tags", nargs="*", default=["ft", "plateau"],
                        help="run-name tags (quality.py --tag=-TAG; none: untagged) to pair within")
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--hypotheses", default="test_hypotheses.txt",
                        help="the file in each run record to compare (test_hypotheses_chosen.txt:"
                             " the model and α `decode_choices.py` chose on validation)")
    args = parser.parse_args(argv)
    reference = os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.de")
    print(f"| tag | seed | {args.baseline} (95% CI) | {args.system} (95% CI) | difference | p |")
    print("|---|---:|---:|---:|---:|---:|")
    for tag in ("" if tag == "none" else "-" + tag for tag in args.tags):
        for seed in sorted(seeds(args.baseline, tag) & seeds(args.system, tag)):
            paths = [os.path.join(RUNS, f"{name}{tag}-seed{seed}", args.hypotheses)
                     for name in (args.baseline, args.system)]
            if not all(os.path.exists(path) for path in paths):
                continue
            base, system = paired_bootstrap(reference, *paths, args.samples)
            print(f"| {tag or '(none)'} | {seed} | {base['score']:.2f} ± {base['ci']:.2f} | "
                  f"{system['score']:.2f} ± {system['ci']:.2f} | "
                  f"{system['score'] - base['score']:+.2f} | {system['p_value']:.3f} |"
                  + "".join(stale(path, row["score"]) for path, row in zip(paths, (base, system))
                            if args.hypotheses == "test_hypotheses.txt"),
                  flush=True)


def stale(hypotheses, bleu):
    """A warning when the run's scores.json gives another beam-5 BLEU than its hypotheses."""
    path = os.path.join(os.path.dirname(hypotheses), "scores.json")
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        recorded = json.load(f)["scores"]["beam5"]["tokenised_bleu"]
    if abs(recorded - bleu) < 0.01:
        return ""
    return f" stale: {os.path.basename(os.path.dirname(hypotheses))} scores {recorded} |"


if __name__ == "__main__":
    main()
