"""`AttentionHeatmapCallback`: one PNG per epoch and sentence, named epoch_NN_sent_i.png."""

import os

import matplotlib.image
import numpy as np

from keras_rnmt.training.heatmap_callback import AttentionHeatmapCallback
from keras_rnmt.translator import Translation

PNG = b"\x89PNG\r\n\x1a\n"


def test_fit_two_epochs_writes_a_heatmap_per_epoch_and_sentence(trained_run):
    folder = trained_run / "heatmaps"
    assert sorted(os.listdir(folder)) == [
        "epoch_01_sent_0.png", "epoch_01_sent_1.png", "epoch_02_sent_0.png", "epoch_02_sent_1.png"]
    for name in os.listdir(folder):
        data = (folder / name).read_bytes()
        assert data[:8] == PNG and len(data) > 1000
        height, width, _ = matplotlib.image.imread(str(folder / name)).shape
        assert height > 100 and width > 100


class _StubTranslator:
    def translate(self, sentences):
        weights = np.array([[0.9, 0.1], [0.2, 0.8]], "float32")
        return [Translation("x", 0.0, ["x"], ["a", "</s>"], weights, ids=[5, 3]) if s.strip()
                else Translation("", 0.0, [], [], None) for s in sentences]


def test_epoch_numbering_and_sentences_without_attention_are_skipped(tmp_path):
    callback = AttentionHeatmapCallback(lambda model: _StubTranslator(), ["a", "", "a"],
                                        str(tmp_path / "maps"))
    callback.on_epoch_end(11)
    assert sorted(os.listdir(tmp_path / "maps")) == ["epoch_12_sent_0.png", "epoch_12_sent_2.png"]
    assert callback.written == [str(tmp_path / "maps" / "epoch_12_sent_0.png"),
                                str(tmp_path / "maps" / "epoch_12_sent_2.png")]
