"""A sentence's teacher-forced outputs do not depend on the padding around it.

Training batches pad each sentence to its batch's longest source and target; test-time
batches mix lengths differently (at SB's bucket width 1 no training source is padded at all).
So for every model kind, one sentence's logits alone must equal its logits inside a batch
whose other sentence is longer, with extra pad columns on both sides: masks, the local
attentions' source length, the encoder's backward direction and the recurrent attention's
window over neighbours' weights must all see only real words.
"""

import numpy as np
import pytest
from keras import ops
from model_helpers import VOCAB, small_model

SHORT_SOURCE = [5, 9, 7, 11, 3]  # four words and </s>
SHORT_TARGET_IN = [2, 11, 7, 9, 5]  # <s> and the reversed words
LONG_SOURCE = [6, 8, 10, 12, 14, 16, 18, 20, 22, 3]
LONG_TARGET_IN = [2, 22, 20, 18, 16, 14, 12, 10, 8, 6, 13, 15]

VARIANTS = {
    "none": dict(attention="none"),
    "bahdanau": dict(attention="bahdanau"),
    "bahdanau, Bahdanau's order": dict(attention="bahdanau", attention_order="bahdanau"),
    "dot": dict(attention="dot", attention_units=32),
    "general": dict(attention="general"),
    "concat": dict(attention="concat"),
    "local-m": dict(attention="local-m", window=2),
    "local-p": dict(attention="local-p", window=2),
    "recurrent k=0": dict(attention="recurrent", window=0),
    "recurrent k=2": dict(attention="recurrent", window=2),
    "coverage": dict(attention="coverage"),
    "GRU, recurrent, context feeding": dict(attention="recurrent", cell="gru",
                                            input_feeding="context"),
    "two layers each": dict(attention="recurrent", encoder_layers=2, decoder_layers=2),
    "self-attention encoder": dict(attention="recurrent", encoder_type="self-attention",
                                   num_heads=2, intermediate_dim=32, transformer_layers=1),
    "transformer": dict(model_type="transformer", num_heads=2, intermediate_dim=32,
                        transformer_layers=1, embedding_dim=16),
    "self-attention encoder, pre-LN": dict(attention="bahdanau", encoder_type="self-attention",
                                           num_heads=2, intermediate_dim=32,
                                           transformer_layers=1, normalize_first=True),
    "transformer, pre-LN": dict(model_type="transformer", num_heads=2, intermediate_dim=32,
                                transformer_layers=2, embedding_dim=16, normalize_first=True),
}


def _padded(rows, length):
    return np.array([row + [0] * (length - len(row)) for row in rows], "int32")


@pytest.mark.parametrize("name", list(VARIANTS))
def test_a_sentence_s_logits_do_not_depend_on_its_batch_s_padding(name):
    model = small_model(**VARIANTS[name])
    alone = model((_padded([SHORT_SOURCE], len(SHORT_SOURCE)),
                   _padded([SHORT_TARGET_IN], len(SHORT_TARGET_IN))), training=False)
    # In a batch: the short sentence first, a longer one after it, and three more pad
    # columns than the longer one needs on each side.
    source = _padded([SHORT_SOURCE, LONG_SOURCE], len(LONG_SOURCE) + 3)
    target_in = _padded([SHORT_TARGET_IN, LONG_TARGET_IN], len(LONG_TARGET_IN) + 3)
    assert source.max() < VOCAB and target_in.max() < VOCAB
    batched = model((source, target_in), training=False)
    alone = ops.convert_to_numpy(alone)[0]
    batched = ops.convert_to_numpy(batched)[0, :len(SHORT_TARGET_IN)]
    assert alone.shape == batched.shape == (len(SHORT_TARGET_IN), VOCAB)
    assert np.all(np.isfinite(alone))
    np.testing.assert_allclose(batched, alone, atol=2e-5, rtol=1e-5, err_msg=name)
