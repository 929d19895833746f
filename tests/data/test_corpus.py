import gzip
import logging

import pytest

from keras_rnmt.data.corpus import (
    CorpusError,
    FilterReport,
    filter_pairs,
    read_lines,
    read_parallel,
    read_tsv,
)


def write(path, data):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "wb") as file:
        file.write(data)
    return path


@pytest.mark.parametrize("name", ["text.txt", "text.txt.gz"])
def test_read_lines_strips_only_the_line_terminator(tmp_path, name):
    data = "one\n  two  \r\nthree\r four\n\nÜber Straße\nlast".encode()
    path = write(tmp_path / name, data)
    assert read_lines(path) == ["one", "  two  ", "three\r four", "", "Über Straße", "last"]
    assert read_lines(str(path)) == read_lines(path)


@pytest.mark.parametrize("name", ["bom.txt", "bom.txt.gz"])
def test_read_lines_drops_a_byte_order_mark_at_the_start_of_the_file_only(tmp_path, name):
    # Windows editors begin a UTF-8 file with EF BB BF: read as text, it would glue U+FEFF
    # to the first word, which would then be unknown to the vocabulary.
    path = write(tmp_path / name, b"\xef\xbb\xbftwo dogs\r\n\xef\xbb\xbfkept\n")
    assert read_lines(path) == ["two dogs", "\ufeffkept"]
    assert read_lines(write(tmp_path / name, b"\xef\xbb\xbf")) == []  # as an empty file
    assert read_lines(write(tmp_path / name, b"\xef\xbb\xbf\n")) == [""]
    # An error on the first line still counts bytes as the file holds them.
    with pytest.raises(CorpusError, match=r":1: invalid UTF-8 \(byte 6 of the line"):
        read_lines(write(tmp_path / name, b"\xef\xbb\xbfab\xffcd\n"))


def test_read_lines_empty_file(tmp_path):
    assert read_lines(write(tmp_path / "empty.txt", b"")) == []


@pytest.mark.parametrize("name", ["bad.txt", "bad.txt.gz"])
def test_read_lines_invalid_utf8_names_file_and_line(tmp_path, name):
    path = write(tmp_path / name, b"fine\nalso fine\nab\xffcd\nnever read\n")
    with pytest.raises(CorpusError) as info:
        read_lines(path)
    assert str(info.value) == f"{path}:3: invalid UTF-8 (byte 3 of the line: invalid start byte)"
    assert isinstance(info.value, ValueError)


def test_read_lines_corrupt_gzip(tmp_path):
    path = tmp_path / "plain_but_named.gz"
    path.write_bytes(b"not gzip at all\n")
    with pytest.raises(CorpusError, match=r"plain_but_named\.gz: corrupt gzip data"):
        read_lines(path)


def test_read_parallel(tmp_path):
    source = write(tmp_path / "a.en", b"hello\nworld\n")
    target = write(tmp_path / "a.de.gz", b"hallo\nwelt\n")
    assert read_parallel(source, target) == (["hello", "world"], ["hallo", "welt"])


def test_read_parallel_mismatched_counts(tmp_path):
    source = write(tmp_path / "a.en", b"1\n2\n3\n")
    target = write(tmp_path / "a.de", b"1\n2\n")
    with pytest.raises(CorpusError) as info:
        read_parallel(source, target)
    assert str(info.value) == (
        f"Parallel files have different line counts: {source} has 3 lines, {target} has 2 lines"
    )


def test_read_tsv(tmp_path):
    path = write(tmp_path / "pairs.tsv", b"a cat\tdie Katze\nx\ty\n")
    assert read_tsv(path) == (["a cat", "x"], ["die Katze", "y"])


@pytest.mark.parametrize(
    "line, found", [(b"no tab here", 1), (b"one\ttwo\tthree", 3), (b"a\tb\tc\td", 4)]
)
def test_read_tsv_wrong_field_count(tmp_path, line, found):
    path = write(tmp_path / "pairs.tsv", b"ok\tfine\n" + line + b"\n")
    with pytest.raises(CorpusError) as info:
        read_tsv(path)
    assert str(info.value) == (
        f"{path}:2: expected 2 tab-separated fields (source, target), found {found}"
    )


def test_filter_pairs_counts_order_and_report(caplog):
    sources = ["a b", "", "c", "w " * 6, "d e f", "g", "  "]
    targets = ["x", "y", " ", "z", "u v w x y z q", "h", "k"]
    with caplog.at_level(logging.INFO, logger="keras_rnmt"):
        kept_sources, kept_targets, report = filter_pairs(sources, targets, max_length=5)
    assert kept_sources == ["a b", "g"]
    assert kept_targets == ["x", "h"]
    assert report == FilterReport(
        kept=2, dropped_empty=3, dropped_too_short=0, dropped_too_long=2, min_length=1, max_length=5
    )
    assert report.total == len(sources)
    assert str(report) == "kept 2 of 7 pairs: dropped 3 empty, 2 longer than 5 words"
    assert "kept 2 of 7 pairs" in caplog.text


def test_filter_pairs_report_thousands_and_min_length():
    sources = ["a"] * 1500 + ["a b c"] * 28950 + ["long " * 60]
    targets = ["b b c"] * 1500 + ["x y z"] * 28950 + ["y z"]
    _, _, report = filter_pairs(sources, targets, max_length=50, min_length=2)
    assert str(report) == (
        "kept 28,950 of 30,451 pairs: dropped 0 empty, 1,500 shorter than 2 words, "
        "1 longer than 50 words"
    )


def test_filter_pairs_no_max_length_keeps_long_pairs():
    sources, targets, report = filter_pairs(["w " * 500], ["v " * 500], max_length=None)
    assert (len(sources), len(targets)) == (1, 1)
    assert str(report) == "kept 1 of 1 pairs: dropped 0 empty"


def test_filter_pairs_bad_arguments():
    with pytest.raises(CorpusError, match=r"Received: 2 sources, 1 targets"):
        filter_pairs(["a", "b"], ["c"])
    with pytest.raises(
        ValueError, match=r"`min_length` must be an integer >= 1\. Received: min_length=0"
    ):
        filter_pairs(["a"], ["b"], min_length=0)
    with pytest.raises(ValueError, match=r"integer >= min_length \(3\)\. Received: max_length=2"):
        filter_pairs(["a"], ["b"], max_length=2, min_length=3)
