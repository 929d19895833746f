"""Corpus metrics with sacreBLEU, the way the literature and modern papers report them."""

import dataclasses
import math

import sacrebleu


@dataclasses.dataclass
class Scores:
    """BLEU (with its sacreBLEU signature), chrF, and the hypothesis/reference counts."""

    bleu: float
    bleu_signature: str
    chrf: float
    chrf_signature: str
    sentences: int

    def __str__(self):
        return (f"BLEU {self.bleu:.2f} ({self.bleu_signature})\n"
                f"chrF {self.chrf:.2f} ({self.chrf_signature})")


def corpus_scores(hypotheses, references, tokenized=False, lowercase=False):
    """sacreBLEU corpus BLEU and chrF.

    Args:
        hypotheses: list of output strings.
        references: list of reference strings, same length and order.
        tokenized: True for text that is already tokenised (Multi30k's lc.norm.tok files):
            BLEU with `tokenize="none"`, the same as multi-bleu.perl, the figure published
            Multi30k results use. False: sacreBLEU's standard 13a tokenisation of
            detokenised text.
        lowercase: case-insensitive BLEU.
    """
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: they must align"
        )
    bleu = sacrebleu.metrics.BLEU(tokenize="none" if tokenized else "13a", lowercase=lowercase)
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return Scores(bleu_score.score, str(bleu.get_signature()), chrf_score.score,
                  str(chrf.get_signature()), len(hypotheses))


def perplexity(mean_token_cross_entropy):
    """Perplexity from the mean per-token cross-entropy (natural log)."""
    return math.exp(mean_token_cross_entropy)
