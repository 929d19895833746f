"""Attention heatmaps of fixed validation sentences after every epoch."""

import os

import keras

from keras_rnmt.plotting import plot_attention
from keras_rnmt.training.callbacks import epoch_translator


class AttentionHeatmapCallback(keras.callbacks.Callback):
    """Translate a few fixed sentences after each epoch and save their attention heatmaps.

    Writes `out_dir/epoch_{NN}_sent_{i}.png` (NN the 1-based epoch, two digits; i the index
    of the sentence in `sentences`), so the files of one sentence show how its alignment
    forms over training. A model without attention weights (attention "none") writes none.

    Args:
        translator_factory: callable(model) -> `Translator` (e.g. greedy, beam 1), as for
            `BleuCallback`.
        sentences: list of source strings (a handful of validation sentences).
        out_dir: folder for the PNGs (created).

    Example:

    ```python
    heatmaps = AttentionHeatmapCallback(
        lambda m: Translator(m, source_tokenizer, target_tokenizer, beam_size=1),
        val_sources[:3], os.path.join(run_dir, "heatmaps"))
    model.fit(train, validation_data=valid, epochs=10, callbacks=[heatmaps])
    ```
    """

    def __init__(self, translator_factory, sentences, out_dir):
        super().__init__()
        self.translator_factory = translator_factory
        self.sentences = list(sentences)
        self.out_dir = out_dir
        self.written = []

    def on_epoch_end(self, epoch, logs=None):
        import matplotlib.pyplot as plt

        os.makedirs(self.out_dir, exist_ok=True)
        translator = epoch_translator(self)
        for index, result in enumerate(translator.translate(self.sentences)):
            if result.attention is None:
                continue
            path = os.path.join(self.out_dir, f"epoch_{epoch + 1:02d}_sent_{index}.png")
            figure = plot_attention(result.attention, result.source_tokens,
                                    (result.tokens + ["</s>"])[:len(result.attention)],
                                    path=path, title=f"epoch {epoch + 1}")
            plt.close(figure)
            self.written.append(path)
