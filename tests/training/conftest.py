"""Fixtures of the end-to-end training tests: `train_and_evaluate` on the toy pair."""

import pytest

from keras_rnmt.training import train


@pytest.fixture
def small_splits(monkeypatch):
    """Validation and test cut to 32 sentences (one batch) to keep decoding cheap."""
    load_splits = train.load_splits
    monkeypatch.setattr(train, "load_splits", lambda config: {
        name: (sources[:32], targets[:32]) if name != "train" else (sources, targets)
        for name, (sources, targets) in load_splits(config).items()})
