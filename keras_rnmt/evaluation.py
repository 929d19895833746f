"""Corpus metrics with sacreBLEU, the way the literature and modern papers report them."""

import dataclasses
import math

import numpy as np
import sacrebleu

from keras_rnmt.sentence_list import check_sentence_list


@dataclasses.dataclass
class Scores:
    """BLEU (with its sacreBLEU signature), chrF, the sentence count, and optionally the
    model's teacher-forced perplexity on the references."""

    bleu: float
    bleu_signature: str
    chrf: float
    chrf_signature: str
    sentences: int
    perplexity: float = None

    def __str__(self):
        text = (f"BLEU {self.bleu:.2f} ({self.bleu_signature})\n"
                f"chrF {self.chrf:.2f} ({self.chrf_signature})")
        if self.perplexity is not None:
            text += f"\nperplexity {self.perplexity:.3f} (teacher-forced, per target token)"
        return text


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
    check_sentence_list(hypotheses, "hypotheses")
    check_sentence_list(references, "references")
    if len(hypotheses) != len(references):
        raise ValueError(
            f"{len(hypotheses)} hypotheses but {len(references)} references: they must align"
        )
    # force: tokenised input is intended here; sacreBLEU would warn about it.
    bleu = sacrebleu.metrics.BLEU(tokenize="none" if tokenized else "13a", lowercase=lowercase,
                                  force=tokenized)
    chrf = sacrebleu.metrics.CHRF()
    bleu_score = bleu.corpus_score(hypotheses, [references])
    chrf_score = chrf.corpus_score(hypotheses, [references])
    return Scores(bleu_score.score, str(bleu.get_signature()), chrf_score.score,
                  str(chrf.get_signature()), len(hypotheses))


def perplexity(mean_token_cross_entropy):
    """Perplexity from the mean per-token cross-entropy (natural log)."""
    return math.exp(mean_token_cross_entropy)


def token_nll(model, source_ids, target_in, target_out):
    """Teacher-forced negative log-likelihood of `target_out`, summed over real tokens.

    Args:
        model: a translation model whose output on `(source_ids, target_in)` is the logits
            (batch, target_len, vocab).
        source_ids, target_in, target_out: int (batch, len) arrays padded with 0, as in the
            training batches (`target_out` = tokens + `</s>`).

    Returns:
        `(total, count)`: the summed NLL (natural log) over non-pad `target_out` tokens,
        `</s>` included, and the number of those tokens.
    """
    # predict_on_batch: one compiled program per batch shape (jit / tf.function), not op by op.
    logits = np.asarray(model.predict_on_batch((source_ids, target_in)), dtype="float64")
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    target_out = np.asarray(target_out)
    picked = np.take_along_axis(log_probs, target_out[..., None].astype("int64"), axis=-1)[..., 0]
    real = target_out != 0
    return float(-picked[real].sum()), int(real.sum())


def corpus_perplexity(model, sources, references, source_tokenizer, target_tokenizer,
                      batch_size=64):
    """The model's teacher-forced perplexity on the references: exp(mean token NLL).

    The mean runs over every non-pad reference token, `</s>` included, of all sentences.
    Pairs are batched by `keras_rnmt.data.make_dataset` (no shuffling, no length filter,
    padded to bucket lengths so a few compiled programs serve every batch; padding changes
    no score: the source is masked and the decoder is causal).
    """
    from keras_rnmt.data import make_dataset

    if not len(sources):
        raise ValueError("no sentence pairs to compute perplexity on")
    dataset = make_dataset(sources, references, source_tokenizer, target_tokenizer,
                           batch_size=batch_size, shuffle=False, pad_to_bucket=True)
    total, count = 0.0, 0
    for (source_ids, target_in), target_out in dataset.as_numpy_iterator():
        batch_total, batch_count = token_nll(model, source_ids, target_in, target_out)
        total, count = total + batch_total, count + batch_count
    if count == 0:
        raise ValueError("no reference tokens to compute perplexity on")
    return perplexity(total / count)
