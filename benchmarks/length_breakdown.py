"""Does recurrent attention's lead over Bahdanau grow with the source sentence's length?

    python benchmarks/length_breakdown.py --tags plateau plateau-ls    # two recipes' seed pairs
    python benchmarks/length_breakdown.py --tags plateau --edges 12    # two buckets: 5-12, 13+

The paper's gains (Yang et al., Tables 2-3) are on WMT news, whose sentences are about twice
as long as Multi30k's captions (13.0 English words on average in test2016): a memory that
tracks what each word has received (fertility) and where attention moved (distortion) has
more to track in a long sentence. This script asks the committed quality records whether
the lead grows with length.

The seed pairs are `significance.py`'s: for every tag and seed with both
`benchmarks/runs/{baseline}-{tag}-seedS/test_hypotheses.txt` and the system's (beam 5, the
run's best model). test2016's sentences are split by their English source's length in words
(`test_2016_flickr.lc.norm.tok.en`) at `--edges` (a bucket ends at each edge, inclusive).
Per bucket, over the seed pairs, it prints:
- each model's mean tokenised BLEU on the bucket's sentences (BLEU's n-gram statistics
  summed over those sentences; the same statistics sum to the run's corpus BLEU);
- the system's lead: mean ± sd over the pairs, the pairs ahead, and the exact two-sided
  sign-flip test of the mean (`significance.sign_flip_test`);
- each model's hypothesis/reference length ratio;
- each model's share of over-repeating hypotheses: a word bigram occurs more than once, and
  more often than in the reference (translating a phrase again, the over-translation a
  fertility memory should prevent; a repeat the reference has too does not count), the
  pairs whose system over-repeats less, and the sign-flip test of the per-pair difference
  of the two shares.
A row `all` does the same over the whole test set (its lead is `significance.py --pool`'s
per-seed mean). A last line tests the trend: per pair, the lead on the longest bucket minus
the lead on the shortest, mean ± sd and the sign-flip test.
"""

import argparse
import collections
import os

import numpy as np
import significance
from sb import data_dir

DEFAULT_EDGES = (10, 13, 16)  # quartile-like buckets of test2016: 5-10, 11-13, 14-16, 17+


def bucket_ids(lengths, edges):
    """The bucket of every sentence: 0 for lengths <= edges[0], ..., len(edges) beyond the
    last edge. `edges` must rise strictly."""
    edges = list(edges)
    if not edges or any(b <= a for a, b in zip(edges, edges[1:])):
        raise ValueError(f"--edges must be one or more strictly rising lengths: {edges}")
    return np.searchsorted(np.asarray(edges), np.asarray(lengths), side="left")


def bucket_names(edges, lengths):
    """Labels `5-10`, `11-13`, ..., `17-33` from the edges and the lengths' range."""
    bounds = [int(min(lengths)) - 1, *edges, int(max(lengths))]
    return [f"{low + 1}-{high}" for low, high in zip(bounds, bounds[1:])]


def bigram_counts(sentence):
    words = sentence.split()
    return collections.Counter(zip(words, words[1:]))


def over_repeats(hypothesis, reference):
    """True when some word bigram occurs more than once in the hypothesis and more often
    than in the reference."""
    reference_counts = bigram_counts(reference)
    return any(count > 1 and count > reference_counts[bigram]
               for bigram, count in bigram_counts(hypothesis).items())


def p_text(p):
    """A p-value for the table: 3 decimals, or 2 significant digits below 0.001."""
    return f"{p:.3f}" if p >= 0.001 else f"{p:.1e}"


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def seed_pairs(baseline, system, tags, hypotheses="test_hypotheses.txt"):
    """[(tag, seed, baseline path, system path)] in `significance.py`'s order."""
    pairs = []
    for tag in significance.tag_suffixes(tags):
        for seed in sorted(significance.seeds(baseline, tag) & significance.seeds(system, tag)):
            paths = [significance.run_file(name, tag, seed, hypotheses)
                     for name in (baseline, system)]
            if all(os.path.exists(path) for path in paths):
                pairs.append((tag, seed, *paths))
    return pairs


def breakdown(pairs, reference, groups):
    """Per group of sentences (a list of boolean masks): BLEU of every pair's two runs,
    (pairs, 2, groups); and the length ratio and the share (%) of over-repeating hypotheses,
    (pairs, 2, groups) each."""
    references = read_lines(reference)
    bleu = np.zeros((len(pairs), 2, len(groups)))
    ratio = np.zeros_like(bleu)
    repeats = np.zeros_like(bleu)
    for p, (_, _, *paths) in enumerate(pairs):
        for m, path in enumerate(paths):
            stats = significance.run_statistics(path, reference)  # S x 10
            repeated = np.array([over_repeats(hypothesis, ref) for hypothesis, ref
                                 in zip(read_lines(path), references, strict=True)])
            for b, rows in enumerate(groups):
                totals = stats[rows].sum(0)
                bleu[p, m, b] = significance.bleu_of(totals)
                ratio[p, m, b] = totals[8] / totals[9]
                repeats[p, m, b] = 100 * repeated[rows].mean()
    return bleu, ratio, repeats


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="bahdanau")
    parser.add_argument("--system", default="recurrent-k5")
    parser.add_argument("--tags", nargs="+", default=["plateau"],
                        help="run-name tags (quality.py --tag=-TAG; none: untagged) to pair within")
    parser.add_argument("--edges", nargs="+", type=int, default=list(DEFAULT_EDGES),
                        help="bucket edges in source words, inclusive (default: %(default)s)")
    parser.add_argument("--hypotheses", default="test_hypotheses.txt",
                        help="the file in each run record to compare")
    args = parser.parse_args(argv)
    folder = data_dir()
    reference = os.path.join(folder, "test_2016_flickr.lc.norm.tok.de")
    lengths = [len(line.split())
               for line in read_lines(os.path.join(folder, "test_2016_flickr.lc.norm.tok.en"))]
    buckets = bucket_ids(lengths, args.edges)
    names = bucket_names(args.edges, lengths) + ["all"]
    groups = [buckets == b for b in range(len(names) - 1)] + [buckets >= 0]
    pairs = seed_pairs(args.baseline, args.system, args.tags, args.hypotheses)
    if not pairs:
        raise SystemExit(f"no seed pairs of {args.baseline} and {args.system} under tags {args.tags}")
    bleu, ratio, repeats = breakdown(pairs, reference, groups)
    lead = bleu[:, 1] - bleu[:, 0]  # pairs x groups

    print(f"{len(pairs)} seed pairs of {args.baseline} (B) and {args.system} (R), tags "
          f"{' '.join(args.tags)}; test2016 by source length in words")
    print("| source words | sentences | B BLEU | R BLEU | lead (mean ± sd) | pairs ahead "
          "| sign-flip p | length ratio B / R | over-repeating % B / R | R fewer | its p |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for b, name in enumerate(names):
        mean, sd, p = significance.sign_flip_test(lead[:, b])
        fewer = repeats[:, 1, b] - repeats[:, 0, b]
        repeat_p = significance.sign_flip_test(fewer)[2]
        print(f"| {name} | {np.sum(groups[b])} | {bleu[:, 0, b].mean():.2f} | "
              f"{bleu[:, 1, b].mean():.2f} | {mean:+.2f} ± {sd:.2f} | "
              f"{np.sum(lead[:, b] > 0)} of {len(pairs)} | {p_text(p)} | "
              f"{ratio[:, 0, b].mean():.3f} / {ratio[:, 1, b].mean():.3f} | "
              f"{repeats[:, 0, b].mean():.1f} / {repeats[:, 1, b].mean():.1f} | "
              f"{np.sum(fewer < 0)} of {len(pairs)} | {p_text(repeat_p)} |", flush=True)
    trend = lead[:, -2] - lead[:, 0]
    mean, sd, p = significance.sign_flip_test(trend)
    print(f"\nlead on {names[-2]} minus lead on {names[0]}, per pair: {mean:+.2f} ± {sd:.2f}, "
          f"larger in {np.sum(trend > 0)} of {len(pairs)}, sign-flip p = {p_text(p)}")


if __name__ == "__main__":
    main()
