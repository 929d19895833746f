"""Reading parallel text, and length filtering of training pairs.

Files are read as strict UTF-8, plain or gzip-compressed (by the `.gz` suffix). Only
the line terminator ("\\n" or "\\r\\n") and a byte-order mark at the very start of the file
(which Windows editors write; it is no part of the text) are removed; every other character,
and every line, is kept. `filter_pairs` is for training data only: evaluation and translation
inputs must never be filtered, or scores would be computed on a subset.
"""

import codecs
import dataclasses
import gzip
import logging
import os

from keras_rnmt.sentence_list import check_sentence_list

logger = logging.getLogger("keras_rnmt")


class CorpusError(ValueError):
    """A corpus file is malformed: bad encoding, wrong field count, mismatched lengths."""


def _open_binary(path):
    if os.fspath(path).endswith(".gz"):
        return gzip.open(path, "rb")
    return open(path, "rb")


def read_lines(path):
    """Read a text file into a list of lines.

    Args:
        path: path of a UTF-8 text file; a name ending in `.gz` is decompressed.

    Returns:
        list of str, one per line, without the trailing "\\n" or "\\r\\n" (and the first
        without a UTF-8 byte-order mark, `U+FEFF` at the start of the file; one anywhere else
        is kept).

    Raises:
        CorpusError: invalid UTF-8 (the message names `path:line`, 1-based) or a
            corrupt gzip stream.

    Example:
    ```python
    sources = read_lines("train.en.gz")
    ```
    """
    lines = []
    line_number = 0
    try:
        with _open_binary(path) as file:
            for line_number, raw in enumerate(file, start=1):
                skipped = 0
                if line_number == 1 and raw.startswith(codecs.BOM_UTF8):
                    raw, skipped = raw[len(codecs.BOM_UTF8):], len(codecs.BOM_UTF8)
                    if not raw:  # the mark alone: an empty file, no line
                        break
                if raw.endswith(b"\r\n"):
                    raw = raw[:-2]
                elif raw.endswith(b"\n"):
                    raw = raw[:-1]
                try:
                    lines.append(raw.decode("utf-8"))
                except UnicodeDecodeError as error:
                    byte = skipped + error.start + 1  # counted in the line as the file has it
                    raise CorpusError(
                        f"{path}:{line_number}: invalid UTF-8 (byte {byte} of the line: "
                        f"{error.reason})"
                    ) from error
    except (gzip.BadGzipFile, EOFError) as error:
        raise CorpusError(f"{path}: corrupt gzip data after line {line_number}: {error}") from error
    return lines


def read_parallel(source_path, target_path):
    """Read two line-aligned files.

    Args:
        source_path: path of the source-language file.
        target_path: path of the target-language file.

    Returns:
        `(sources, targets)`, two lists of str of equal length.

    Raises:
        CorpusError: the files have different line counts (both paths and counts are
            given), or either file is not valid UTF-8.
    """
    sources = read_lines(source_path)
    targets = read_lines(target_path)
    if len(sources) != len(targets):
        raise CorpusError(
            f"Parallel files have different line counts: {source_path} has {len(sources)} "
            f"lines, {target_path} has {len(targets)} lines"
        )
    return sources, targets


def read_tsv(path):
    """Read a tab-separated file with one `source<TAB>target` pair per line.

    Args:
        path: path of the file (plain or `.gz`).

    Returns:
        `(sources, targets)`, two lists of str.

    Raises:
        CorpusError: a line does not have exactly two fields (names `path:line` and the
            number of fields found), or invalid UTF-8.
    """
    sources, targets = [], []
    for line_number, line in enumerate(read_lines(path), start=1):
        fields = line.split("\t")
        if len(fields) != 2:
            raise CorpusError(
                f"{path}:{line_number}: expected 2 tab-separated fields (source, target), "
                f"found {len(fields)}"
            )
        sources.append(fields[0])
        targets.append(fields[1])
    return sources, targets


@dataclasses.dataclass(frozen=True)
class FilterReport:
    """What `filter_pairs` kept and dropped.

    Attributes:
        kept: number of pairs kept.
        dropped_empty: pairs with an empty (or whitespace-only) side.
        dropped_too_short: pairs with a side of fewer than `min_length` words (only
            possible when `min_length > 1`).
        dropped_too_long: pairs with a side of more than `max_length` words.
        min_length: the `min_length` used.
        max_length: the `max_length` used (`None`: no limit).
    """

    kept: int
    dropped_empty: int
    dropped_too_short: int
    dropped_too_long: int
    min_length: int
    max_length: int | None

    @property
    def total(self):
        return self.kept + self.dropped_empty + self.dropped_too_short + self.dropped_too_long

    def __str__(self):
        parts = [f"{self.dropped_empty:,} empty"]
        if self.min_length > 1:
            parts.append(f"{self.dropped_too_short:,} shorter than {self.min_length:,} words")
        if self.max_length is not None:
            parts.append(f"{self.dropped_too_long:,} longer than {self.max_length:,} words")
        return f"kept {self.kept:,} of {self.total:,} pairs: dropped " + ", ".join(parts)


def filter_pairs(sources, targets, max_length=50, min_length=1):
    """Drop training pairs with an empty side or a side of the wrong length.

    Length is counted in whitespace-separated words. Kept pairs stay in order. The
    report is logged (logger `"keras_rnmt"`, level INFO) and returned. Use for
    training data only.

    Args:
        sources: list of str.
        targets: list of str, aligned with `sources`.
        max_length: int or `None`. Drop a pair if either side has more words.
            Defaults to 50.
        min_length: int >= 1. Drop a pair if either side has fewer words. Defaults to 1
            (only empty sides are dropped).

    Returns:
        `(sources, targets, report)` with `report` a `FilterReport`.

    Example:
    ```python
    sources, targets, report = filter_pairs(sources, targets, max_length=50)
    print(report)  # kept 28,950 of 29,000 pairs: dropped 0 empty, 50 longer than 50 words
    ```
    """
    check_sentence_list(sources, "sources")
    check_sentence_list(targets, "targets")
    if len(sources) != len(targets):
        raise CorpusError(
            f"`sources` and `targets` must have the same length. Received: {len(sources)} "
            f"sources, {len(targets)} targets"
        )
    if not isinstance(min_length, int) or min_length < 1:
        raise ValueError(
            f"`min_length` must be an integer >= 1. Received: min_length={min_length!r}"
        )
    if max_length is not None and (not isinstance(max_length, int) or max_length < min_length):
        raise ValueError(
            "`max_length` must be None or an integer >= min_length "
            f"({min_length}). Received: max_length={max_length!r}"
        )
    kept_sources, kept_targets = [], []
    empty = too_short = too_long = 0
    for source, target in zip(sources, targets):
        source_length = len(source.split())
        target_length = len(target.split())
        if source_length == 0 or target_length == 0:
            empty += 1
        elif min(source_length, target_length) < min_length:
            too_short += 1
        elif max_length is not None and max(source_length, target_length) > max_length:
            too_long += 1
        else:
            kept_sources.append(source)
            kept_targets.append(target)
    report = FilterReport(
        kept=len(kept_sources),
        dropped_empty=empty,
        dropped_too_short=too_short,
        dropped_too_long=too_long,
        min_length=min_length,
        max_length=max_length,
    )
    logger.info("filter_pairs: %s", report)
    return kept_sources, kept_targets, report
