import hashlib
import importlib
import os
import pathlib
import shutil

import pytest
from conftest import multi30k_dir

from keras_rnmt.datasets.multi30k import SHA256, multi30k

# The package exports the function under the module's name; fetch the module itself.
multi30k_module = importlib.import_module("keras_rnmt.datasets.multi30k")

FIRST_LINES = {
    ("tok", "en"): "two young , white males are outside near many bushes .",
    ("tok", "de"): "zwei junge weiße männer sind im freien in der nähe vieler büsche .",
    ("raw", "en"): "Two young, White males are outside near many bushes.",
    ("raw", "de"): "Zwei junge weiße Männer sind im Freien in der Nähe vieler Büsche.",
}


@pytest.mark.multi30k
@pytest.mark.parametrize("variant", ["tok", "raw"])
@pytest.mark.parametrize(
    "split, count", [("train", 29000), ("val", 1014), ("test_2016_flickr", 1000)]
)
def test_split_sizes(split, count, variant):
    sources, targets = multi30k(split, "en", "de", variant=variant, data_dir=multi30k_dir())
    assert (len(sources), len(targets)) == (count, count)
    if split == "train":
        assert sources[0] == FIRST_LINES[(variant, "en")]
        assert targets[0] == FIRST_LINES[(variant, "de")]


@pytest.mark.multi30k
def test_environment_variable_aliases_and_other_languages(monkeypatch):
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    assert multi30k("test") == multi30k("test_2016_flickr")
    assert multi30k("valid", "fr", "cs") == multi30k("validation", "fr", "cs")
    sources, targets = multi30k("val", "cs", "en")
    assert len(sources) == len(targets) == 1014


@pytest.mark.multi30k
def test_checksums_match_the_shared_files():
    folder = pathlib.Path(multi30k_dir())
    for name, digest in SHA256.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name


@pytest.mark.multi30k
def test_download_path_verifies_checksum(monkeypatch, tmp_path):
    """Files not found locally are fetched with `keras.utils.get_file` and checked."""
    folder = pathlib.Path(multi30k_dir()).resolve()  # KERAS_RNMT_DATA may be relative
    monkeypatch.delenv("KERAS_RNMT_DATA", raising=False)
    remote = folder.as_uri() + "/"
    monkeypatch.setattr(multi30k_module, "BASE_URLS", {"tok": remote, "raw": remote})
    sources, targets = multi30k("val", variant="raw", cache_dir=str(tmp_path))
    assert len(sources) == len(targets) == 1014
    assert (tmp_path / "datasets" / "multi30k" / "val.en.gz").is_file()

    # A corrupted remote file fails the SHA-256 check.
    corrupt = tmp_path / "remote"
    corrupt.mkdir()
    shutil.copy(folder / "val.lc.norm.tok.en", corrupt)
    (corrupt / "val.lc.norm.tok.de").write_text("not the real file\n")
    bad = corrupt.as_uri() + "/"
    monkeypatch.setattr(multi30k_module, "BASE_URLS", {"tok": bad, "raw": bad})
    with pytest.raises(FileNotFoundError, match=r"val\.lc\.norm\.tok\.de"):
        multi30k("val", cache_dir=str(tmp_path / "cache"))


def test_missing_files_error_lists_every_place(monkeypatch, tmp_path):
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    monkeypatch.setenv("KERAS_RNMT_DATA", str(tmp_path / "root"))
    nowhere = (tmp_path / "no_such_remote").as_uri() + "/"
    monkeypatch.setattr(multi30k_module, "BASE_URLS", {"tok": nowhere, "raw": nowhere})
    with pytest.raises(FileNotFoundError) as info:
        multi30k("train", data_dir=data_dir, cache_dir=str(tmp_path / "cache"))
    message = str(info.value)
    assert message.startswith("Multi30k file 'train.lc.norm.tok.en' not found. Looked in:")
    assert f"  - {data_dir / 'train.lc.norm.tok.en'}" in message
    assert f"  - {tmp_path / 'root' / 'multi30k' / 'train.lc.norm.tok.en'}" in message
    assert f"tried to download {nowhere}train.lc.norm.tok.en" in message


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"split": "test_2017_flickr"},
         "`split` must be one of ['train', 'val', 'test_2016_flickr', 'test', 'valid', "
         "'validation']. Received: split='test_2017_flickr'"),
        ({"split": "train", "source": "es"},
         "`source` must be one of ['en', 'de', 'fr', 'cs']. Received: source='es'"),
        ({"split": "train", "target": "EN"},
         "`target` must be one of ['en', 'de', 'fr', 'cs']. Received: target='EN'"),
        ({"split": "train", "variant": "bpe"},
         "`variant` must be one of ['tok', 'raw']. Received: variant='bpe'"),
        ({"split": "train", "source": "de", "target": "de"},
         "`source` and `target` must differ. Received: both 'de'"),
    ],
)  # fmt: skip
def test_bad_arguments(kwargs, message):
    with pytest.raises(ValueError) as info:
        multi30k(**kwargs)
    assert str(info.value) == message
