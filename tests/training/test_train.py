"""`train_and_evaluate` end to end on the toy pair: the run directory and the plateau decay."""

import csv
import json
import os

import pytest

from keras_rnmt.models import ModelConfig
from keras_rnmt.training import train
from keras_rnmt.training.config import TrainConfig


@pytest.fixture
def small_splits(monkeypatch):
    """Validation and test cut to 32 sentences (one batch) to keep decoding cheap."""
    load_splits = train.load_splits
    monkeypatch.setattr(train, "load_splits", lambda config: {
        name: (sources[:32], targets[:32]) if name != "train" else (sources, targets)
        for name, (sources, targets) in load_splits(config).items()})


def test_plateau_decay_run_logs_its_learning_rate(tmp_path, small_splits):
    config = TrainConfig(
        dataset="toy", toy_examples=256, min_frequency=1,
        model=ModelConfig(embedding_dim=8, encoder_units=8, decoder_units=16, attention="dot",
                          dropout=0.0),
        batch_size=32, epochs=4, steps_per_epoch=2, learning_rate=1e-2, lr_decay=0.5,
        lr_patience=0, patience=0, beam_size=1, heatmap_sentences=0)
    results = train.train_and_evaluate(config, str(tmp_path))
    assert results["epochs_run"] == 4
    with open(tmp_path / "log.csv") as f:
        rows = list(csv.DictReader(f))
    bleus = [float(row["val_bleu"]) for row in rows]
    rates = [float(row["learning_rate"]) for row in rows]
    # Epoch e's row holds the rate epoch e trained with; it is halved after every epoch
    # whose BLEU does not beat all earlier ones (patience 0), kept otherwise.
    expected, best, rate = [], float("-inf"), 1e-2
    for bleu in bleus:
        expected.append(rate)
        if bleu > best:
            best = bleu
        else:
            rate /= 2
    assert rates == pytest.approx(expected, rel=1e-6)
    with open(tmp_path / "config.json") as f:
        assert json.load(f)["lr_decay"] == 0.5
    assert os.path.exists(tmp_path / "best.keras")
