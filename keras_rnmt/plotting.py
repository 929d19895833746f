"""Attention heatmaps (after JoeyNMT's `plot_heatmap`): tokens on both axes, colours 0..1."""

import numpy as np


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
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    weights = np.asarray(weights, dtype="float32")[: len(target_tokens), : len(source_tokens)]
    if ax is None:
        width = max(4.0, 0.45 * len(source_tokens) + 2)
        height = max(3.0, 0.4 * len(target_tokens) + 1.5)
        figure, ax = plt.subplots(figsize=(width, height))
    else:
        figure = ax.figure
    image = ax.imshow(weights, cmap="viridis", vmin=0.0, vmax=1.0, aspect="auto")
    ax.set_xticks(range(len(source_tokens)))
    ax.set_xticklabels(source_tokens, rotation=60, ha="right")
    ax.set_yticks(range(len(target_tokens)))
    ax.set_yticklabels(target_tokens)
    ax.set_xlabel("source")
    ax.set_ylabel("target")
    if title:
        ax.set_title(title)
    figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    figure.tight_layout()
    if path:
        figure.savefig(path, dpi=120)
    return figure


def plot_attention_comparison(panels, source_tokens, path=None):
    """Side-by-side heatmaps of several models on one sentence.

    Args:
        panels: list of (title, weights, target_tokens).
        source_tokens: shared source labels.
        path: optional file to save.
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    rows = max(len(p[2]) for p in panels)
    figure, axes = plt.subplots(1, len(panels), figsize=(
        len(panels) * max(4.0, 0.45 * len(source_tokens) + 2), max(3.0, 0.4 * rows + 1.5)))
    for ax, (title, weights, target_tokens) in zip(np.atleast_1d(axes), panels):
        plot_attention(weights, source_tokens, target_tokens, title=title, ax=ax)
    if path:
        figure.savefig(path, dpi=120)
    return figure
