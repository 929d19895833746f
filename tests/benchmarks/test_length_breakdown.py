"""`benchmarks/length_breakdown.py`: the lead of recurrent attention by source length and the
over-repeating hypotheses, over the committed quality records."""

import json
import os

import numpy as np
import pytest
from script_helpers import BENCHMARKS, run_script


def test_buckets_end_at_each_edge_inclusive():
    import length_breakdown

    lengths = [5, 10, 11, 13, 14, 16, 17, 33]
    assert length_breakdown.bucket_ids(lengths, [10, 13, 16]).tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    assert length_breakdown.bucket_names([10, 13, 16], lengths) == [
        "5-10", "11-13", "14-16", "17-33"]
    for edges in ([], [13, 10], [10, 10]):
        with pytest.raises(ValueError, match="strictly rising"):
            length_breakdown.bucket_ids(lengths, edges)


def test_over_repeating_counts_only_repeats_the_reference_lacks():
    import length_breakdown

    reference = "ein mann in einem blauen hemd"
    assert length_breakdown.over_repeats("ein mann in einem hemd in einem hemd", reference)
    assert not length_breakdown.over_repeats("ein mann in einem blauen hemd", reference)
    # A word repeated alone is not a repeated bigram.
    assert not length_breakdown.over_repeats("ein mann mann in einem hemd", reference)
    # The reference repeats "mit einer" too: the hypothesis does not do it more often.
    reference = "eine frau mit einer violine und mit einer gitarre"
    assert not length_breakdown.over_repeats("eine frau mit einer gitarre mit einer violine",
                                             reference)
    assert length_breakdown.over_repeats("mit einer mit einer mit einer", reference)


@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_breakdown_of_the_recorded_pairs_adds_up_to_their_corpus_bleu():
    """Over the plateau seed pairs: the buckets hold the 1,000 sentences, the `all` row's
    BLEUs are the means of the runs' recorded beam-5 BLEUs and its lead their mean
    difference; the sign-flip p of a bucket is `significance.sign_flip_test`'s."""
    import length_breakdown
    import significance

    out = run_script("length_breakdown.py", "--tags", "plateau")
    cells = [[cell.strip() for cell in line.split("|")[1:-1]]
             for line in out.splitlines() if line.startswith("| ")]
    rows = {row[0]: row[1:] for row in cells[1:]}  # after the header
    assert list(rows) == ["5-10", "11-13", "14-16", "17-33", "all"]
    assert sum(int(rows[name][0]) for name in ["5-10", "11-13", "14-16", "17-33"]) == 1000
    assert rows["all"][0] == "1000"
    pairs = length_breakdown.seed_pairs("bahdanau", "recurrent-k5", ["plateau"])
    assert len(pairs) >= 3 and f"{len(pairs)} seed pairs" in out
    recorded = np.zeros((len(pairs), 2))
    for p, (tag, seed, *_) in enumerate(pairs):
        for m, name in enumerate(["bahdanau", "recurrent-k5"]):
            with open(os.path.join(BENCHMARKS, "runs", f"{name}{tag}-seed{seed}",
                                   "scores.json")) as f:
                recorded[p, m] = json.load(f)["scores"]["beam5"]["tokenised_bleu"]
    assert float(rows["all"][1]) == pytest.approx(recorded[:, 0].mean(), abs=0.006)
    assert float(rows["all"][2]) == pytest.approx(recorded[:, 1].mean(), abs=0.006)
    mean, sd, p = significance.sign_flip_test(recorded[:, 1] - recorded[:, 0])
    assert rows["all"][3] == f"{mean:+.2f} ± {sd:.2f}"
    assert rows["all"][5] == length_breakdown.p_text(p)
    # Each bucket's BLEU lies between the run's BLEUs on other sentences: not a copy of `all`.
    bucket_bleus = [float(rows[name][1]) for name in ["5-10", "11-13", "14-16", "17-33"]]
    assert len(set(bucket_bleus)) == 4 and min(bucket_bleus) < float(rows["all"][1]) < max(
        bucket_bleus)
    assert "lead on 17-33 minus lead on 5-10, per pair:" in out
