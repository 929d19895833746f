"""Heatmaps: the figure is returned, the PNG is written, both axes carry the tokens."""

import numpy as np

from keras_rnmt.plotting import plot_attention, plot_attention_comparison


def test_plot_attention_writes_png_with_token_labels(tmp_path):
    weights = np.array([[0.9, 0.1, 0.0], [0.2, 0.7, 0.1]])
    path = tmp_path / "heat.png"
    figure = plot_attention(weights, ["a", "dog", "</s>"], ["ein", "hund"], path=str(path))
    assert path.exists() and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "dog", "</s>"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ein", "hund"]
    assert ax.images[0].get_clim() == (0.0, 1.0)


def test_side_by_side_comparison(tmp_path):
    source = ["a", "dog", "</s>"]
    panels = [("bahdanau", np.eye(3)[:2], ["ein", "hund"]),
              ("recurrent", np.eye(3), ["ein", "hund", "</s>"])]
    figure = plot_attention_comparison(panels, source, path=str(tmp_path / "cmp.png"))
    titles = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titles == ["bahdanau", "recurrent"]
    assert (tmp_path / "cmp.png").exists()
