"""Plots: the figure is returned, the PNG is written, axes carry the tokens or the CSV data."""

import numpy as np

from keras_rnmt.plotting import (
    plot_attention,
    plot_attention_comparison,
    plot_memory_norms,
    plot_training_curves,
)


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


def test_memory_norms_panel_labels_values_and_colour_range(tmp_path):
    norms = np.array([[0.5, 0.5, 0.5], [1.5, 0.2, 0.0]])
    path = tmp_path / "memory.png"
    figure = plot_memory_norms(norms, ["a", "dog", "</s>"], ["ein", "hund"], path=str(path))
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    ax = figure.axes[0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["a", "dog", "</s>"]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["ein", "hund"]
    np.testing.assert_allclose(ax.images[0].get_array(), norms)
    assert ax.images[0].get_clim() == (0.0, 1.5)
    assert figure.axes[1].get_ylabel() == "||d_ij||"  # the colour bar


LOG = """epoch,loss,val_bleu,val_loss
0,3.2,1.5,3.0
1,2.4,NA,2.5
1,2.1,12.0,2.2
2,1.7,20.25,1.9
"""


def test_training_curves_plot_the_csv_columns(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text(LOG)
    figure = plot_training_curves(str(log), path=str(tmp_path / "curves.png"))
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    losses, bleu = figure.axes
    lines = {line.get_label(): line for line in losses.get_lines() + bleu.get_lines()}
    assert sorted(lines) == ["loss", "val_bleu", "val_loss"]
    # 1-based epochs; the resumed epoch's second row wins.
    np.testing.assert_array_equal(lines["loss"].get_xdata(), [1, 2, 3])
    np.testing.assert_allclose(lines["loss"].get_ydata(), [3.2, 2.1, 1.7])
    np.testing.assert_allclose(lines["val_loss"].get_ydata(), [3.0, 2.2, 1.9])
    np.testing.assert_allclose(lines["val_bleu"].get_ydata(), [1.5, 12.0, 20.25])
    assert bleu.get_ylabel() == "BLEU" and losses.get_xlabel() == "epoch"
    assert [t.get_text() for t in losses.get_legend().get_texts()] == ["loss", "val_loss"]


def test_training_curves_without_bleu_have_one_axes(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("epoch,loss,val_loss\n0,2.0,NA\n")
    figure = plot_training_curves(str(log))
    assert len(figure.axes) == 1
    val_loss = [line for line in figure.axes[0].get_lines() if line.get_label() == "val_loss"][0]
    assert np.isnan(val_loss.get_ydata()[0])
