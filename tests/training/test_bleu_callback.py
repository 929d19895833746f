"""`BleuCallback` reuses one translator over the epochs, and it translates with the current
weights (its compiled search must not keep the weights of the epoch it was compiled in)."""

import os

import keras
from run_helpers import SOURCES, TARGETS, tiny_parts

from keras_rnmt.data import make_dataset
from keras_rnmt.evaluation import corpus_scores
from keras_rnmt.training.callbacks import BleuCallback
from keras_rnmt.training.losses import MaskedCrossEntropy
from keras_rnmt.translator import Translator


def test_one_translator_for_every_epoch_translates_with_the_current_weights(tmp_path):
    model, source_tokenizer, target_tokenizer = tiny_parts()
    data = make_dataset(SOURCES, TARGETS, source_tokenizer, target_tokenizer, batch_size=4,
                        shuffle=False)
    made = []

    def factory(m):
        made.append(Translator(m, source_tokenizer, target_tokenizer, beam_size=1,
                               max_length_b=4))
        return made[-1]

    callback = BleuCallback(factory, SOURCES, TARGETS, os.path.join(tmp_path, "best.keras"),
                            patience=0)
    before = Translator(model, source_tokenizer, target_tokenizer, beam_size=1,
                        max_length_b=4)(SOURCES)
    model.compile(optimizer=keras.optimizers.Adam(3e-2), loss=MaskedCrossEntropy())
    model.fit(data.repeat(), epochs=3, steps_per_epoch=5, verbose=0, callbacks=[callback],
              shuffle=False)

    assert len(made) == 1 and len(callback.history) == 3
    fresh = Translator(model, source_tokenizer, target_tokenizer, beam_size=1, max_length_b=4)
    after = fresh(SOURCES)
    assert after != before  # training changed the translations...
    assert made[0](SOURCES) == after  # ...and the reused translator sees the new weights
    assert callback.history[-1] == corpus_scores(after, TARGETS, tokenized=True).bleu
