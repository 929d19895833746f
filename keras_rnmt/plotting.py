"""Figures of a model at work (after JoeyNMT's `plot_heatmap`): attention heatmaps, the
recurrent attention's memory norms, and training curves. Each function returns the figure."""

import csv
import math

import numpy as np


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _heatmap(values, source_tokens, target_tokens, path, title, ax, vmax, label):
    """A (target, source) heatmap with tokens on both axes; colours 0..vmax."""
    values = np.asarray(values, dtype="float32")[: len(target_tokens), : len(source_tokens)]
    if ax is None:
        width = max(4.0, 0.45 * len(source_tokens) + 2)
        height = max(3.0, 0.4 * len(target_tokens) + 1.5)
        figure, ax = _pyplot().subplots(figsize=(width, height))
    else:
        figure = ax.figure
    image = ax.imshow(values, cmap="viridis", vmin=0.0, vmax=vmax, aspect="auto")
    ax.set_xticks(range(len(source_tokens)))
    ax.set_xticklabels(source_tokens, rotation=60, ha="right")
    ax.set_yticks(range(len(target_tokens)))
    ax.set_yticklabels(target_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title:
        ax.set_title(title)
    colorbar = figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    if label:
        colorbar.set_label(label)
    figure.tight_layout()
    if path:
        figure.savefig(path, dpi=120)
    return figure


def plot_attention(weights, source_tokens, target_tokens, path=None, title=None, ax=None):
    """Draw attention weights as a heatmap.

    Args:
        weights: array (len(target_tokens), len(source_tokens)); row j is the attention of
            target token j over the source. Extra rows/columns are cut off.
        source_tokens: list of str, the column labels (x axis).
        target_tokens: list of str, the row labels (y axis).
        path: optional file to save (PNG, PDF, ... by extension).
        title: optional title.
        ax: optional matplotlib axes to draw into (for side-by-side figures).

    Returns:
        The matplotlib `Figure`.
    """
    return _heatmap(weights, source_tokens, target_tokens, path, title, ax, 1.0, None)


def plot_memory_norms(norms, source_tokens, target_tokens, path=None, title=None, ax=None):
    """Draw the recurrent attention's memory norms ||d_ij|| (Yang et al. Eq. 10) as a heatmap.

    Row j, column i is the L2 norm of source word i's dynamic memory in the score of target
    step j: how much the memory has "seen" of that word's attention history (fertility).

    Args:
        norms: array (len(target_tokens), len(source_tokens)), non-negative; e.g.
            `memory_norms(translator.attention_states(sentence, translation))`.
        source_tokens: list of str, the column labels (x axis).
        target_tokens: list of str, the row labels (y axis).
        path: optional file to save.
        title: optional title.
        ax: optional matplotlib axes to draw into.

    Returns:
        The matplotlib `Figure`; colours run from 0 to the largest norm shown.
    """
    norms = np.asarray(norms, dtype="float32")[: len(target_tokens), : len(source_tokens)]
    vmax = float(norms.max()) if norms.size and norms.max() > 0 else 1.0
    return _heatmap(norms, source_tokens, target_tokens, path, title, ax, vmax, "||d_ij||")


def plot_attention_comparison(panels, source_tokens, path=None):
    """Side-by-side heatmaps of several models on one sentence.

    Args:
        panels: list of (title, weights, target_tokens).
        source_tokens: shared source labels.
        path: optional file to save.
    """
    rows = max(len(p[2]) for p in panels)
    figure, axes = _pyplot().subplots(1, len(panels), figsize=(
        len(panels) * max(4.0, 0.45 * len(source_tokens) + 2), max(3.0, 0.4 * rows + 1.5)))
    for ax, (title, weights, target_tokens) in zip(np.atleast_1d(axes), panels):
        plot_attention(weights, source_tokens, target_tokens, title=title, ax=ax)
    if path:
        figure.savefig(path, dpi=120)
    return figure


def read_training_log(log_csv_path):
    """A run's `log.csv` (Keras `CSVLogger`) as {column: float array}, one entry per epoch.

    Epochs are 1-based (the CSV's 0-based `epoch` + 1). A resumed run can log an epoch twice;
    the last row wins. Missing values ("NA" or empty) are NaN.
    """
    rows = {}
    with open(log_csv_path, newline="") as f:
        for row in csv.DictReader(f):
            rows[int(float(row["epoch"])) + 1] = row
    epochs = sorted(rows)
    columns = {"epoch": np.array(epochs, dtype="float64")}
    for key in (rows[epochs[0]] if epochs else {}):
        if key != "epoch":
            columns[key] = np.array([_float(rows[e].get(key)) for e in epochs], dtype="float64")
    return columns


def _float(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return math.nan


def plot_training_curves(log_csv_path, path=None):
    """Loss and validation loss per epoch (left axes) and validation BLEU (right axes).

    Args:
        log_csv_path: a run's `log.csv` (columns `epoch`, `loss`, `val_loss`, `val_bleu`, ...;
            absent ones are not drawn, and without `val_bleu` there is one axes).
        path: optional file to save.

    Returns:
        The matplotlib `Figure`; lines are labelled with their CSV column names.
    """
    columns = read_training_log(log_csv_path)
    if len(columns["epoch"]) == 0:
        raise ValueError(f"{log_csv_path} has no epochs logged yet")
    has_bleu = "val_bleu" in columns
    figure, axes = _pyplot().subplots(1, 2 if has_bleu else 1, figsize=(10 if has_bleu else 5, 3.5))
    axes = np.atleast_1d(axes)
    for key in ("loss", "val_loss"):
        if key in columns:
            axes[0].plot(columns["epoch"], columns[key], marker="o", label=key)
    axes[0].set_xlabel("epoch")
    axes[0].set_ylabel("cross-entropy")
    axes[0].legend()
    if has_bleu:
        axes[1].plot(columns["epoch"], columns["val_bleu"], marker="o", color="C2",
                     label="val_bleu")
        axes[1].set_xlabel("epoch")
        axes[1].set_ylabel("BLEU")
        axes[1].legend()
    figure.tight_layout()
    if path:
        figure.savefig(path, dpi=120)
    return figure
