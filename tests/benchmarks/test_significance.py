"""`benchmarks/significance.py`: the paired bootstrap over the committed quality records and
the exact sign-flip test over seed pairs."""

import itertools
import json
import os

import numpy as np
import pytest
from conftest import multi30k_dir
from script_helpers import BENCHMARKS, run_main, run_script


@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_significance_reproduces_each_recorded_runs_bleu():
    """The paired bootstrap over the committed plateau records: each system's BLEU is the
    beam-5 BLEU its `scores.json` records (the script flags a mismatch as `stale`)."""
    import significance

    paired = sorted(significance.seeds("bahdanau", "-plateau")
                    & significance.seeds("recurrent-k5", "-plateau"))
    assert len(paired) >= 3
    out = run_script("significance.py", "--tags", "plateau", "--samples", "20")
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| -plateau")]
    assert [row[1].strip() for row in rows] == (
        [str(seed) for seed in paired] + [f"mean of {len(paired)}", "seeds, sign-flip test"])
    assert "stale" not in out
    differences = [float(row[4]) for row in rows[:len(paired)]]
    mean, _, p = significance.sign_flip_test(differences)
    assert rows[-1][4].strip().startswith(f"{mean:+.2f} ± ") and float(rows[-1][5]) == round(p, 3)
    for row in rows[:len(paired)]:
        for name, cell in (("bahdanau", row[2]), ("recurrent-k5", row[3])):
            path = os.path.join(BENCHMARKS, "runs", f"{name}-plateau-seed{row[1].strip()}",
                                "scores.json")
            with open(path) as f:
                recorded = json.load(f)["scores"]["beam5"]["tokenised_bleu"]
            assert float(cell.split("±")[0]) == pytest.approx(recorded, abs=0.01)


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_significance_pools_the_seed_pairs_of_all_tags(capsys, monkeypatch):
    """`--pool`: the `all tags` rows test every tag's seed pairs together; the sign flip runs
    over the per-seed differences of all of them, in the tags' order."""
    import significance

    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    out = run_main(significance, capsys, "--tags", "plateau", "plateau-ls", "--pool",
                   "--samples", "20")
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| -plateau")]
    differences = [float(row[4]) for row in rows if row[1].strip().isdigit()]
    pooled = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| all tags")]
    assert [row[1].strip() for row in pooled] == [f"mean of {len(differences)}",
                                                  "seeds, sign-flip test"]
    assert len(differences) > len(significance.seeds("recurrent-k5", "-plateau"))
    mean, sd, p = significance.sign_flip_test(differences)
    assert pooled[1][4].strip() == f"{mean:+.2f} ± {sd:.2f} (sd over {len(differences)} seeds)"
    assert float(pooled[1][5]) == round(p, 3)
    assert float(pooled[0][4].split()[0]) == pytest.approx(mean, abs=0.011)
    # Without --pool the rows are per tag only.
    alone = run_main(significance, capsys, "--tags", "plateau", "--samples", "20")
    assert "all tags" not in alone


def test_sign_flip_test_is_exact_on_small_cases():
    import significance

    mean, sd, p = significance.sign_flip_test([1.0, 2.0, 3.0])
    assert (mean, sd) == (2.0, 1.0)
    assert p == 2 / 8  # only all-positive and all-negative reach |mean| 2
    # One flipped small difference still counts as extreme: 4 of the 16 sign patterns.
    assert significance.sign_flip_test([0.11, 0.36, -0.03, 1.97])[2] == 4 / 16
    assert significance.sign_flip_test([1.0, -1.0])[2] == 1.0


def test_sign_flip_test_is_exact_past_the_enumerated_block():
    import significance

    # 26 pairs (the pooled recipes of RESULTS §4) exceed the 16-sign block: 10 prefixes.
    # Equal differences: only all-positive and all-negative reach the observed mean.
    assert significance.sign_flip_test([0.5] * 26)[2] == 2 / 2**26
    # One large and 25 small: flipping any sign lowers |sum| below the observed 5.5.
    assert significance.sign_flip_test([3.0] + [0.1] * 25)[2] == 2 / 2**26
    # 17 pairs, split across the block boundary, agree with a direct count.
    differences = [0.3, -0.2, 0.5, 0.1, -0.4, 0.6, 0.2, -0.1, 0.7, 0.05, 0.3, -0.6, 0.4, 0.2,
                   -0.3, 0.9, 0.15]
    signs = np.array(list(itertools.product((1.0, -1.0), repeat=17)))
    expected = np.mean(np.abs(signs @ np.abs(differences)) >= abs(sum(differences)) - 1e-9)
    assert significance.sign_flip_test(differences)[2] == expected


def test_group_permutation_test_is_exact_on_small_cases():
    import significance

    # Runs 1, 2 against 3, 4, 5: the observed split (+2.5) is the most extreme of the
    # C(5, 2) = 10; its mirror ({4, 5} as the baseline, -2.5) is as far from 0.
    difference, one_sided, two_sided = significance.group_permutation_test([1, 2], [3, 4, 5])
    assert difference == 2.5
    assert (one_sided, two_sided) == (1 / 10, 2 / 10)
    # The system behind: every split is at least as high, one-sided p is 1.
    assert significance.group_permutation_test([3, 4], [1, 2])[1] == 1.0
    # Ties count as extreme: all scores equal gives p = 1 both ways.
    assert significance.group_permutation_test([1, 1], [1])[1:] == (1.0, 1.0)
    with pytest.raises(ValueError, match="at least one run"):
        significance.group_permutation_test([], [1.0, 2.0])


@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_unpaired_compares_every_run_of_the_two_models(capsys, monkeypatch):
    """`--unpaired`: the peer's continued runs against our Bahdanau seeds, each run's BLEU
    its `scores.json`'s, the p-value the permutation test's over those BLEUs."""
    import significance

    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    out = run_main(significance, capsys, "--unpaired", "--tags", "none",
                   "--baseline", "joeynmt-plateau-cont", "--system", "bahdanau-plateau")
    [row] = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| (none)")]
    groups = []
    for name in ("joeynmt-plateau-cont", "bahdanau-plateau"):
        recorded = []
        for seed in sorted(significance.seeds(name, "")):
            with open(os.path.join(BENCHMARKS, "runs", f"{name}-seed{seed}", "scores.json")) as f:
                recorded.append(json.load(f)["scores"]["beam5"]["tokenised_bleu"])
        groups.append(recorded)
    assert row[1].strip() == f"{len(groups[0])} + {len(groups[1])}"
    for cell, recorded in zip(row[2:4], groups):
        assert [float(x) for x in cell.split(",")] == pytest.approx(recorded, abs=0.01)
    difference, one_sided, two_sided = significance.group_permutation_test(*groups)
    assert float(row[4]) == pytest.approx(difference, abs=0.011)
    assert (float(row[5]), float(row[6])) == pytest.approx((one_sided, two_sided), abs=0.001)
