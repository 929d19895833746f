"""`benchmarks/joeynmt_quality.py` turns the peer config into the plateau recipe's (text only)."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import joeynmt_peer  # noqa: E402
import joeynmt_quality  # noqa: E402
import quality  # noqa: E402
from conftest import multi30k_dir  # noqa: E402


def test_set_key_replaces_one_value_and_refuses_a_missing_or_repeated_key():
    text = "training:\n    epochs: 1\n    updates: 460\n"
    assert joeynmt_peer.set_key(text, "epochs", 12) == "training:\n    epochs: 12\n    updates: 460\n"
    with pytest.raises(SystemExit, match="sb.yaml: expected one 'patience:' line"):
        joeynmt_peer.set_key(text, "patience", 0, "sb.yaml")
    with pytest.raises(SystemExit, match="expected one 'epochs:' line"):
        joeynmt_peer.set_key(text + "    epochs: 2\n", "epochs", 12)


@pytest.mark.multi30k
def test_the_plateau_config_changes_only_the_training_schedule_and_dropout(monkeypatch):
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    given = joeynmt_peer.config_text("/tmp/work")
    written = joeynmt_quality.quality_config(given, 3, 12, 454)
    removed = set(given.splitlines()) - set(written.splitlines())
    added = set(written.splitlines()) - set(given.splitlines())
    assert {line.strip() for line in removed} == {
        "random_seed: 42", 'scheduling: "exponential"', "decrease_factor: 1.0", "epochs: 1",
        "updates: 460", "validation_freq: 450", "logging_freq: 50", 'early_stopping_metric: "loss"',
        "dropout: 0.2", "hidden_dropout: 0.2"}
    assert {line.strip() for line in added} == {
        "random_seed: 3", 'scheduling: "plateau"', "patience: 0", "decrease_factor: 0.5",
        "epochs: 12", "validation_freq: 454", "logging_freq: 454", 'early_stopping_metric: "bleu"',
        "dropout: 0.3", "hidden_dropout: 0.3"}
    assert written.count("dropout: 0.3") == 3


@pytest.mark.multi30k
def test_an_epoch_is_454_updates_of_64_sentences(monkeypatch):
    """All 29,000 training pairs are within JoeyNMT's 50 words a side."""
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    assert joeynmt_quality.updates_per_epoch() == 454


def test_the_quality_table_shows_a_record_without_unk_replacement():
    """`quality.py --table` reads `joeynmt_quality.py`'s scores.json (beam 5 and 12 only)."""
    scores = {name: {"tokenised_bleu": bleu, "detokenised_bleu": bleu - 3}
              for name, bleu in (("beam5", 36.5), ("beam12", 36.7))}
    record = {"run_dir": "benchmarks/work/joeynmt-quality/joeynmt-plateau-seed0",
              "epochs_run": 12, "training_seconds": 3600.0, "scores": scores}
    table = quality.table({"joeynmt-plateau": [record]})
    assert table.splitlines()[-1] == (
        "| joeynmt-plateau | 1 | 12 | 1.00 | 36.50 / 33.50 | — | 36.70 / 33.70 | — |")


def test_a_continued_run_loads_the_last_checkpoint_and_counts_joeynmts_epochs(tmp_path):
    """JoeyNMT restarts its loop at the checkpoint's epoch: 4 more after 12 is `epochs: 15`."""
    for name in ("454.ckpt", "5448.ckpt", "908.ckpt", "best.ckpt", "5448.hyps"):
        (tmp_path / name).write_text("")
    checkpoint = joeynmt_quality.last_checkpoint(str(tmp_path))
    assert checkpoint == str(tmp_path / "5448.ckpt")
    text = ('training:\n    epochs: 12\n    validation_freq: 454\n'
            '    model_dir: "/w/joeynmt-plateau-seed0/model"\n')
    assert joeynmt_quality.continued_config(text, checkpoint, "/w/cont/model", 4) == (
        f'training:\n    epochs: 15\n    load_model: "{checkpoint}"\n    validation_freq: 454\n'
        '    model_dir: "/w/cont/model"\n')
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(SystemExit, match="no STEP.ckpt in"):
        joeynmt_quality.last_checkpoint(str(empty))
