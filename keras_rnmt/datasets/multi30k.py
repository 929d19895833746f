"""Multi30k Task 1: English, German, French and Czech image captions.

29,000 training, 1,014 validation and 1,000 test (`test_2016_flickr`) sentences, line-
aligned across languages (Elliott et al., 2016; French: Elliott et al., 2017; Czech:
Barrault et al., 2018). Two variants of the same text:

- `"tok"`: `{split}.lc.norm.tok.{lang}`, lowercased, punctuation-normalised and Moses-
  tokenised. Published BLEU on this benchmark is computed on these files.
- `"raw"`: `{split}.{lang}.gz`, the original cased captions.

Files are looked up in `data_dir`, then in `$KERAS_RNMT_DATA/multi30k`, then in (or
downloaded into) the Keras cache from the public repository
https://github.com/multi30k/dataset, checked against the SHA-256 digests below.
Other test sets (2017, 2018) are deliberately not offered: do not tune on them.
"""

import os

import keras

from keras_rnmt.data.corpus import read_parallel

LANGUAGES = ("en", "de", "fr", "cs")
SPLITS = ("train", "val", "test_2016_flickr")
SPLIT_ALIASES = {"test": "test_2016_flickr", "valid": "val", "validation": "val"}
VARIANTS = ("tok", "raw")
NUM_EXAMPLES = {"train": 29000, "val": 1014, "test_2016_flickr": 1000}

BASE_URLS = {
    "tok": "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/tok/",
    "raw": "https://raw.githubusercontent.com/multi30k/dataset/master/data/task1/raw/",
}
CACHE_SUBDIR = os.path.join("datasets", "multi30k")

# SHA-256 of every file, computed from the files of the public repository.
SHA256 = {
    "test_2016_flickr.cs.gz": "200a4a74cc9560f051924abb9803be008d1908d77f747e9141aeb86dfd2797f1",
    "test_2016_flickr.de.gz": "9204244e408ccb38d2a55cfcd344df15005fc42a07a6e55ca6c52b6ababb8cc8",
    "test_2016_flickr.en.gz": "611d361c6334bc7246101d48097c13cf5c4413c5befc793cc629934359d532d9",
    "test_2016_flickr.fr.gz": "6d326e188d259fb1d04ac19eae3af956559b3a0b93d7635e56c90987c40c8b90",
    "test_2016_flickr.lc.norm.tok.cs": "748c8816de928732365176e5c5d2f9bbabcec9b8d4448fba2d230feb057898a7",
    "test_2016_flickr.lc.norm.tok.de": "c6a33d39d48f9f510de147651316cd9d918e09ad0219df734a2f16b6baccacc4",
    "test_2016_flickr.lc.norm.tok.en": "5b7f32627cf99eced828311b955dae9800bb52bc8b91cf8b6526829e605b29d2",
    "test_2016_flickr.lc.norm.tok.fr": "1463bd5960f9bfe098ec3cd752d3df0c49c84dc646fb518964a29232658cd836",
    "train.cs.gz": "a65adb8b32e3bc664f21ecba7a6e7f6950fd1f405e135f7c312faabdb6255077",
    "train.de.gz": "726e39b2fa9eb9ffb6dc763fb35a179f80fae06ffc5d28b6ace5faa883de28a6",
    "train.en.gz": "d79cfa999dd4c51d2cb42499b6796d5a882c3a8a961923c25a898c90f8bbd56f",
    "train.fr.gz": "622e75069e9f4c577425c4f277116ce66e63a2401c0a2312d90073cb12379a3c",
    "train.lc.norm.tok.cs": "7645fb91efa18f94c83d493f740a5d5a941e4b01efa6a124bf2d4af040e133e0",
    "train.lc.norm.tok.de": "cb5a23529b65ec2061f1dc446192a9c37382b63cc75f81a0be59d34894b3a505",
    "train.lc.norm.tok.en": "08925f8e0572bcd5a006702fc5fe20e2d77c6917d4eebd576fc20de6693c2119",
    "train.lc.norm.tok.fr": "8fa41bb718412bcb7c5dfa58603842810a01543eae86a51279f9886b901266e1",
    "val.cs.gz": "b63226e05c4bd5dd6a42897d74b86a1b9d2c31498252c572b1ea7f7996927fcc",
    "val.de.gz": "f0cba2f995189cf5770f29a8a9a537a3ad3f51657ad873405082ff6863a5e75a",
    "val.en.gz": "14f7d25ddd868909a9213e361768460edcacdd6ab9d1e77b92560dc10c10dc28",
    "val.fr.gz": "ca3106f1a72390591d25f6c45cb4cd39dec4cd3f123e099748a3ce5256c160e9",
    "val.lc.norm.tok.cs": "b87ee4917f4a0f9ca6cca03e402026c9f4437dc1bd6a7dadfd2544ecfb6c5501",
    "val.lc.norm.tok.de": "97232bd273eceb7207f689527386a97e4be2616b18ada47576bdaf96c8ae1f00",
    "val.lc.norm.tok.en": "46573ce391ae227f1c72f873392436a20ef18e0a6d518098cfbd70b77c8572ec",
    "val.lc.norm.tok.fr": "b303e301aa21fe7822a846b2b3fb2d5a1121ec807cd5b1d006fb7b2b5507168a",
}


def _choice(value, choices, argument):
    if value not in choices:
        raise ValueError(
            f"`{argument}` must be one of {list(choices)}. Received: {argument}={value!r}"
        )
    return value


def file_name(split, language, variant="tok"):
    """Return the repository file name of one split, language and variant."""
    if variant == "tok":
        return f"{split}.lc.norm.tok.{language}"
    return f"{split}.{language}.gz"


def _locate(name, variant, data_dir, cache_dir):
    """Return the path of file `name`, downloading it if no local copy is found."""
    looked_in = []
    folders = []
    if data_dir is not None:
        folders.append(os.fspath(data_dir))
    root = os.environ.get("KERAS_RNMT_DATA")
    if root:
        folders.append(os.path.join(root, "multi30k"))
    for folder in folders:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return path
        looked_in.append(path)
    url = BASE_URLS[variant] + name
    if cache_dir is not None:
        # get_file silently falls back to /tmp/.keras when cache_dir does not exist yet.
        os.makedirs(cache_dir, exist_ok=True)
    try:
        return keras.utils.get_file(
            fname=name,
            origin=url,
            file_hash=SHA256[name],
            hash_algorithm="sha256",
            cache_subdir=CACHE_SUBDIR,
            cache_dir=cache_dir,
        )
    except Exception as error:
        places = "".join(f"\n  - {path}" for path in looked_in) or "\n  - (no local folder)"
        raise FileNotFoundError(
            f"Multi30k file {name!r} not found. Looked in:{places}\n  - the Keras cache "
            f"({CACHE_SUBDIR}), then tried to download {url}: {error}\nPass `data_dir=` or set "
            "KERAS_RNMT_DATA to the folder holding multi30k/."
        ) from error


def multi30k(split, source="en", target="de", variant="tok", data_dir=None, cache_dir=None):
    """Load one split of Multi30k Task 1 as aligned sentence lists.

    Every line is returned, none dropped (filter training pairs yourself with
    `keras_rnmt.data.filter_pairs`).

    Args:
        split: str. `"train"`, `"val"` or `"test_2016_flickr"`; the aliases `"test"`
            (for `"test_2016_flickr"`) and `"valid"`/`"validation"` (for `"val"`) are
            accepted.
        source: str. Source language: `"en"`, `"de"`, `"fr"` or `"cs"`. Defaults to
            `"en"`.
        target: str. Target language, different from `source`. Defaults to `"de"`.
        variant: str. `"tok"` (default; lowercased, tokenised) or `"raw"` (cased).
        data_dir: path or `None`. Folder holding the files themselves. Defaults to
            `None`: use `$KERAS_RNMT_DATA/multi30k`, else the download cache.
        cache_dir: path or `None`. Keras cache root for downloads (default
            `~/.keras`); files go to `{cache_dir}/datasets/multi30k`.

    Returns:
        `(sources, targets)`, two lists of str.

    Example:
    ```python
    train_sources, train_targets = multi30k("train", "en", "de")
    test_sources, test_references = multi30k("test", "en", "de")
    ```
    """
    split = _choice(SPLIT_ALIASES.get(split, split), SPLITS + tuple(SPLIT_ALIASES), "split")
    _choice(source, LANGUAGES, "source")
    _choice(target, LANGUAGES, "target")
    _choice(variant, VARIANTS, "variant")
    if source == target:
        raise ValueError(f"`source` and `target` must differ. Received: both {source!r}")
    paths = [
        _locate(file_name(split, language, variant), variant, data_dir, cache_dir)
        for language in (source, target)
    ]
    return read_parallel(*paths)
