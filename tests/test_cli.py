"""The `keras-rnmt` command: overrides, translate on files with empty and long lines."""

import os
import subprocess
import sys

import pytest

from keras_rnmt.cli import main, parse_overrides
from keras_rnmt.data import build_tokenizer
from keras_rnmt.models import ModelConfig, build_model


def test_parse_overrides():
    assert parse_overrides(["--attention", "recurrent", "--window=5"]) == {
        "attention": "recurrent", "window": "5"}
    with pytest.raises(ValueError, match="Missing a value for --epochs"):
        parse_overrides(["--epochs"])


def test_train_rejects_unknown_key_with_valid_choices(tmp_path):
    recipe = os.path.join(os.path.dirname(__file__), "..", "recipes", "toy.py")
    with pytest.raises(ValueError, match="Unknown config key 'atention'. Valid keys: .*attention"):
        main(["train", recipe, "--atention", "dot", "--run-dir", str(tmp_path)])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("run")
    sources = ["a dog runs .", "the cat sleeps"]
    targets = ["ein hund läuft .", "die katze schläft"]
    source_tokenizer = build_tokenizer("word", sources, min_frequency=1)
    target_tokenizer = build_tokenizer("word", targets, min_frequency=1)
    model = build_model(ModelConfig(
        source_vocab_size=source_tokenizer.vocabulary_size(),
        target_vocab_size=target_tokenizer.vocabulary_size(), embedding_dim=8,
        encoder_units=8, decoder_units=16, attention="bahdanau", attention_units=8,
        dropout=0.0))
    model.save(str(path / "best.keras"))
    source_tokenizer.save(str(path / "source_tokenizer.json"))
    target_tokenizer.save(str(path / "target_tokenizer.json"))
    return path


def test_translate_writes_one_line_per_input_line(run_dir, tmp_path):
    lines = ["a dog runs .", "", "the cat sleeps", " ".join(["dog"] * 300), ""]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "out.txt"
    alignments = tmp_path / "align.txt"
    env = {**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}
    subprocess.run([sys.executable, "-m", "keras_rnmt.cli", "translate", str(run_dir), "-i",
                    str(source), "-o", str(output), "--beam-size", "2", "--alignments",
                    str(alignments)], check=True, env=env, capture_output=True)
    written = output.read_text(encoding="utf-8").split("\n")
    assert written[-1] == "" and len(written) - 1 == len(lines)
    assert written[1] == "" and written[4] == ""
    assert len(alignments.read_text().split("\n")) - 1 == len(lines)


def test_translate_reports_invalid_utf8_with_file_and_line(run_dir, tmp_path):
    source = tmp_path / "bad.txt"
    source.write_bytes(b"fine\n\xff\xfe broken\n")
    env = {**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}
    result = subprocess.run([sys.executable, "-m", "keras_rnmt.cli", "translate", str(run_dir),
                             "-i", str(source)], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert f"{source}:2" in result.stderr
