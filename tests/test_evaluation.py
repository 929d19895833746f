"""sacreBLEU wrappers (tokenised and detokenised BLEU, chrF, errors) and perplexity."""

import math

import numpy as np
import pytest
import sacrebleu
from keras import ops
from run_helpers import SOURCES, TARGETS, tiny_parts

from keras_rnmt.evaluation import corpus_perplexity, corpus_scores, perplexity


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
    assert perplexity(math.log(7.0)) == pytest.approx(7.0)


def test_corpus_perplexity_of_no_pairs_is_an_error():
    model, source_tokenizer, target_tokenizer = tiny_parts()
    with pytest.raises(ValueError, match="^no sentence pairs to compute perplexity on$"):
        corpus_perplexity(model, [], [], source_tokenizer, target_tokenizer)


def test_corpus_perplexity_is_exp_of_mean_token_nll_from_the_logits():
    model, source_tokenizer, target_tokenizer = tiny_parts()
    total, count = 0.0, 0
    for source, target in zip(SOURCES, TARGETS):  # one unpadded sentence at a time, by hand
        source_ids = source_tokenizer.tokenize([source]).to_list()[0] + [3]
        target_ids = target_tokenizer.tokenize([target]).to_list()[0]
        logits = ops.convert_to_numpy(model((np.array([source_ids]),
                                             np.array([[2] + target_ids]))))[0]
        log_probs = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
        labels = target_ids + [3]  # every token and </s>
        total -= sum(log_probs[t, label] for t, label in enumerate(labels))
        count += len(labels)
    expected = math.exp(total / count)
    assert count == sum(len(t.split()) + 1 for t in TARGETS)
    got = corpus_perplexity(model, SOURCES, TARGETS, source_tokenizer, target_tokenizer,
                            batch_size=3)
    assert got == pytest.approx(expected, rel=1e-5)
    assert 1.0 < got < 2 * target_tokenizer.vocabulary_size()  # near uniform: untrained


def test_scores_print_perplexity_when_set():
    scores = corpus_scores(["a b"], ["a b"], tokenized=True)
    assert "perplexity" not in str(scores)
    scores.perplexity = 12.3456
    assert str(scores).split("\n")[-1].startswith("perplexity 12.346")
