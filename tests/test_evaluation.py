"""sacreBLEU wrappers: tokenised (multi-bleu style) and detokenised BLEU, chrF, errors."""

import pytest
import sacrebleu

from keras_rnmt.evaluation import corpus_scores, perplexity


def test_identical_output_scores_100_with_signature():
    scores = corpus_scores(["ein hund läuft ."], ["ein hund läuft ."], tokenized=True)
    assert scores.bleu == pytest.approx(100.0)
    assert "tok:none" in scores.bleu_signature and scores.sentences == 1


def test_matches_sacrebleu_directly():
    hypotheses = ["the cat sat on the mat .", "a dog runs"]
    references = ["the cat is on the mat .", "a dog runs fast"]
    expected = sacrebleu.corpus_bleu(hypotheses, [references], tokenize="none").score
    assert corpus_scores(hypotheses, references, tokenized=True).bleu == pytest.approx(expected)
    expected_13a = sacrebleu.corpus_bleu(hypotheses, [references]).score
    assert corpus_scores(hypotheses, references).bleu == pytest.approx(expected_13a)


def test_mismatched_counts_are_an_error():
    with pytest.raises(ValueError, match="2 hypotheses but 1 references"):
        corpus_scores(["a", "b"], ["a"])


def test_perplexity():
    assert perplexity(0.0) == 1.0
