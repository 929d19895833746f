"""UNK replacement from a hand-made attention matrix."""

import numpy as np
import pytest

from keras_rnmt.unk import load_dictionary, replace_unknown


def test_unk_takes_the_most_attended_source_word():
    source = ["ein", "zebra", "läuft", "</s>"]
    attention = np.array([
        [0.7, 0.1, 0.1, 0.1],   # "a"
        [0.1, 0.8, 0.05, 0.05],  # <unk> -> zebra
        [0.1, 0.1, 0.2, 0.6],   # <unk>: </s> has the most weight but is never chosen -> läuft
    ])
    assert replace_unknown(["a", "<unk>", "<unk>"], source, attention) == ["a", "zebra", "läuft"]


def test_unk_uses_the_dictionary_when_it_has_the_word(tmp_path):
    path = tmp_path / "dict.tsv"
    path.write_text("zebra\tZebra\n\nläuft\truns\n", encoding="utf-8")
    dictionary = load_dictionary(str(path))
    attention = np.array([[0.1, 0.9, 0.0, 0.0]])
    assert replace_unknown(["<unk>"], ["ein", "zebra", "läuft", "</s>"], attention,
                           dictionary=dictionary) == ["Zebra"]


def test_bad_dictionary_line_names_file_and_line(tmp_path):
    path = tmp_path / "dict.tsv"
    path.write_text("a\tb\nonly-one-field\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"dict.tsv:2: expected 2 fields \(source, target\), found 1"):
        load_dictionary(str(path))


def test_dictionary_with_invalid_utf8_names_file_and_line(tmp_path):
    path = tmp_path / "dict.tsv"
    path.write_bytes(b"a\tb\r\n\nzebra\tZebra\nbad\t\xff\n")
    with pytest.raises(ValueError, match=r"dict.tsv:4: invalid UTF-8"):
        load_dictionary(str(path))
    path.write_bytes(b"a\tb\r\n\nzebra\tZebra\n")
    assert load_dictionary(str(path)) == {"a": "b", "zebra": "Zebra"}  # "\r\n" ends a line
