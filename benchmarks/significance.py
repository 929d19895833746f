"""Is recurrent attention's lead over Bahdanau on test2016 more than sampling noise?

    python benchmarks/significance.py                          # every tag with both models
    python benchmarks/significance.py --tags plateau --baseline bahdanau --system recurrent-k5
    python benchmarks/significance.py --tags plateau plateau-ls --pool   # both recipes together
    python benchmarks/significance.py --unpaired --tags none \
        --baseline joeynmt-plateau-cont --system bahdanau-plateau        # the peer, unpaired

For every seed S that has both `benchmarks/runs/{baseline}-{tag}-seedS/test_hypotheses.txt`
and `.../{system}-{tag}-seedS/test_hypotheses.txt` (tag `none`: `{name}-seedS`) (beam 5, the run's best model, as
`quality.py` writes them), sacreBLEU's paired bootstrap resampling (Koehn, 2004; 1,000
resamples of the 1,000 test2016 sentences, tokenised BLEU against `lc.norm.tok`) gives both
systems' BLEU, its 95% confidence interval and the p-value of the system beating the
baseline by chance. Prints one markdown row per (tag, seed), then per tag a row for the mean
over seeds: the same resamples of test sentences applied to every seed of both models, the
difference of the two means of seed BLEUs, its 95% interval and sacreBLEU's p-value (this
covers test-set sampling, not the seed-to-seed spread). A last row per tag tests the seeds:
the mean and sd of the per-seed differences, and the exact two-sided sign-flip test of
their mean (under "no difference" each seed's difference is as likely positive as
negative; with n seeds p cannot fall below 2 / 2**n, 0.125 for 4). `--pool` adds both rows
for the seed pairs of all the tags together (`all tags`): each pair is still two models
trained with the same recipe and seed, so the sign-flip null holds pair by pair. A
hypotheses file whose BLEU differs from the run's `scores.json` (beam 5) was written by an
older search (the 8-epoch runs decoded with the exact stop rule at the end of training) and
is flagged.

`--unpaired` compares two groups of runs whose seeds share nothing (another toolkit, or
another number of epochs): every seed of each model under each tag, not only the common
ones. It prints each group's beam-5 BLEUs and the exact permutation test of the difference
of the two groups' means: of the C(n, k) ways to call k of the n runs the baseline's, the
share whose difference (system mean − baseline mean) is at least the observed one (one-sided,
system ahead) or at least as far from 0 (two-sided).
"""

import argparse
import collections
import functools
import glob
import itertools
import json
import os
import re
import subprocess
import sys

import numpy as np
import sacrebleu
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


def sentence_statistics(hypotheses, references):
    """Per sentence: matched and total n-grams for n = 1..4, then hypothesis and reference
    lengths (S, 10); BLEU's sufficient statistics on whitespace tokens (sacreBLEU's
    `--tokenize none`)."""
    rows = []
    for hypothesis, reference in zip(hypotheses, references, strict=True):
        hyp, ref = hypothesis.split(), reference.split()
        row = []
        for n in range(1, 5):
            hyp_ngrams = collections.Counter(zip(*(hyp[i:] for i in range(n))))
            ref_ngrams = collections.Counter(zip(*(ref[i:] for i in range(n))))
            row.append(sum((hyp_ngrams & ref_ngrams).values()))
            row.append(max(0, len(hyp) - n + 1))
        rows.append(row + [len(hyp), len(ref)])
    return np.array(rows, "float64")


def bleu_of(totals):
    """Corpus BLEU from summed statistics (..., 10), as sacreBLEU computes it when every
    n-gram order has a match (it smooths only a zero count)."""
    matches, counts = totals[..., 0:8:2], totals[..., 1:8:2]
    if np.any(matches == 0):
        raise ValueError("an n-gram order without a match: smoothing not implemented")
    log_precision = np.log(matches / counts).mean(-1)
    hyp_len, ref_len = totals[..., 8], totals[..., 9]
    brevity = np.where(hyp_len < ref_len, 1 - ref_len / np.maximum(hyp_len, 1), 0.0)
    return 100 * np.exp(log_precision + brevity)


@functools.cache
def run_statistics(path, reference):
    """`sentence_statistics` of one hypotheses file, checked against sacreBLEU's corpus BLEU;
    kept for the process (`--pool` tests each tag's runs again)."""
    with open(reference, encoding="utf-8") as f:
        references = f.read().splitlines()
    with open(path, encoding="utf-8") as f:
        hypotheses = f.read().splitlines()
    stats = sentence_statistics(hypotheses, references)
    expected = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none", force=True).score
    assert abs(bleu_of(stats.sum(0)) - expected) < 1e-6, (path, expected)
    stats.flags.writeable = False
    return stats


def pooled_bootstrap(reference, baselines, systems, samples, seed=12345):
    """Mean-over-seeds paired bootstrap: (baseline mean, system mean, difference, 95% CI of
    the difference, p-value as sacreBLEU's paired bootstrap computes it)."""
    stats = np.stack([run_statistics(path, reference)
                      for path in baselines + systems])  # runs x S x 10
    size = stats.shape[1]
    index = np.random.default_rng(seed).integers(0, size, (samples, size))
    resampled = bleu_of(np.stack([stats[:, rows].sum(1) for rows in index], 1))  # runs x N
    full = bleu_of(stats.sum(1))
    split = len(baselines)
    difference = full[split:].mean() - full[:split].mean()
    differences = resampled[split:].mean(0) - resampled[:split].mean(0)
    low, high = np.percentile(differences, [2.5, 97.5])
    # sacreBLEU's test statistic: the absolute difference, centred on its resampled mean.
    centred = np.abs(differences) - np.abs(differences).mean()
    p_value = (np.sum(centred > abs(difference)) + 1) / (samples + 1)
    return full[:split].mean(), full[split:].mean(), difference, (low, high), p_value


def sign_flip_test(differences):
    """Exact two-sided sign-flip (paired permutation) test of the mean of per-seed
    differences: (mean, sd, p), p the share of the 2**n sign patterns whose mean is at least
    as far from 0 as the observed one."""
    differences = np.asarray(differences, "float64")
    n = len(differences)
    magnitudes = np.abs(differences)
    # The last (at most 16) signs as one block, the rest one prefix at a time: exact for the
    # 26 pooled pairs of §4 without a 2**26 x 26 matrix.
    tail = min(n, 16)
    block = np.array(list(itertools.product((1.0, -1.0), repeat=tail))) @ magnitudes[n - tail:]
    observed = abs(differences.sum()) - 1e-9  # |sum| ranks patterns as |mean| does
    extreme = sum(
        int(np.count_nonzero(np.abs(block + np.dot(prefix, magnitudes[:n - tail])) >= observed))
        for prefix in itertools.product((1.0, -1.0), repeat=n - tail))
    return differences.mean(), differences.std(ddof=1), extreme / 2.0 ** n


def group_permutation_test(baseline, system):
    """Exact permutation test of mean(system) − mean(baseline) over the runs' scores:
    (difference, one-sided p for system > baseline, two-sided p), p the share of the
    C(n, len(baseline)) relabellings of the n runs as extreme as the observed one."""
    scores = np.asarray(list(baseline) + list(system), "float64")
    n, k = len(scores), len(baseline)
    if k < 1 or n - k < 1:
        raise ValueError("each group needs at least one run")
    total = scores.sum()
    # Each relabelling is fixed by its baseline runs' sum: the system's is the rest.
    baseline_sums = np.array([scores[list(chosen)].sum()
                              for chosen in itertools.combinations(range(n), k)])
    def difference(baseline_sum):
        return (total - baseline_sum) / (n - k) - baseline_sum / k

    differences, observed = difference(baseline_sums), difference(scores[:k].sum())
    one_sided = np.mean(differences >= observed - 1e-12)
    two_sided = np.mean(np.abs(differences) >= abs(observed) - 1e-12)
    return observed, one_sided, two_sided


def tag_suffixes(tags):
    """Run-name suffixes of `--tags`: `none` is the untagged `{name}-seedS`."""
    return ["" if tag == "none" else "-" + tag for tag in tags]


def run_file(name, tag, seed, filename):
    return os.path.join(RUNS, f"{name}{tag}-seed{seed}", filename)


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
    parser.add_argument("--pool", action="store_true",
                        help="also test the seed pairs of all the tags together: one recipe per"
                             " tag, the same two models (rows `all tags`)")
    parser.add_argument("--unpaired", action="store_true",
                        help="compare all runs of the two models as unpaired groups (exact "
                             "permutation test of the difference of means), not seed pairs")
    args = parser.parse_args(argv)
    reference = os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.de")
    if args.unpaired:
        return unpaired(args, reference)
    print(f"| tag | seed | {args.baseline} (95% CI) | {args.system} (95% CI) | difference | p |")
    print("|---|---:|---:|---:|---:|---:|")
    all_pairs, all_differences = [], []
    for tag in tag_suffixes(args.tags):
        pairs, differences = [], []
        for seed in sorted(seeds(args.baseline, tag) & seeds(args.system, tag)):
            paths = [run_file(name, tag, seed, args.hypotheses)
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
            pairs.append(paths)
            differences.append(system["score"] - base["score"])
        if len(pairs) > 1:
            summarise(tag or "(none)", reference, pairs, differences, args.samples)
        all_pairs += pairs
        all_differences += differences
    if args.pool and len(all_pairs) > 1:
        summarise("all tags", reference, all_pairs, all_differences, args.samples)


def unpaired(args, reference):
    """`--unpaired`: per tag, one row per model (its runs' BLEUs) and the permutation test."""
    print(f"| tag | runs | {args.baseline} | {args.system} | difference of means "
          "| p one-sided | p two-sided |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for tag in tag_suffixes(args.tags):
        groups = []
        for name in (args.baseline, args.system):
            paths = [run_file(name, tag, seed, args.hypotheses)
                     for seed in sorted(seeds(name, tag))]
            groups.append([bleu_of(run_statistics(path, reference).sum(0))
                           for path in paths if os.path.exists(path)])
        if not all(groups):
            continue
        difference, one_sided, two_sided = group_permutation_test(*groups)
        cells = [", ".join(f"{score:.2f}" for score in group) for group in groups]
        print(f"| {tag or '(none)'} | {len(groups[0])} + {len(groups[1])} | {cells[0]} | "
              f"{cells[1]} | {difference:+.2f} | {one_sided:.3f} | {two_sided:.3f} |",
              flush=True)


def summarise(label, reference, pairs, differences, samples):
    """The rows for the mean over seed pairs (test-set bootstrap) and across them (sign flip)."""
    base, system, difference, (low, high), p = pooled_bootstrap(
        reference, [b for b, _ in pairs], [s for _, s in pairs], samples)
    print(f"| {label} | mean of {len(pairs)} | {base:.2f} | {system:.2f} | "
          f"{difference:+.2f} (95% CI {low:+.2f} to {high:+.2f}) | {p:.3f} |", flush=True)
    mean, sd, p = sign_flip_test(differences)
    print(f"| {label} | seeds, sign-flip test | | | {mean:+.2f} ± {sd:.2f} "
          f"(sd over {len(pairs)} seeds) | {p:.3f} |", flush=True)


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
