"""Choose, train, save and load a tokenizer by name.

`build_tokenizer("word" | "wordpiece" | "sentencepiece", texts, **options)` creates a
tokenizer and learns its vocabulary from training-side `texts`; `tokenizer.save(path)`
writes one JSON file and `load_tokenizer(path)` returns an instance of whichever class
was saved.
"""

import inspect
import json

from keras_rnmt.data.base_tokenizer import SAVE_FORMAT, SAVE_VERSION
from keras_rnmt.data.subword import SentencePieceTokenizer, WordPieceTokenizer
from keras_rnmt.data.word_tokenizer import WordTokenizer
from keras_rnmt.sentence_list import check_sentence_list

TOKENIZERS = {
    "word": WordTokenizer,
    "wordpiece": WordPieceTokenizer,
    "sentencepiece": SentencePieceTokenizer,
}
_CLASSES = {cls.__name__: cls for cls in TOKENIZERS.values()}


def _parameters(function):
    names = inspect.signature(function).parameters
    return [name for name in names if name not in ("self", "texts", "kwargs")]


def build_tokenizer(kind, texts, **options):
    """Create a tokenizer of `kind` and build its vocabulary from `texts`.

    Each option goes to the constructor or to `build_vocabulary`, whichever takes it.

    Args:
        kind: str. `"word"` (`WordTokenizer`), `"wordpiece"` (`WordPieceTokenizer`) or
            `"sentencepiece"` (`SentencePieceTokenizer`).
        texts: list of str. Training-side text only.
        **options: e.g. `lowercase=True`, `max_size=10000`, `min_frequency=2` (word);
            `vocabulary_size=8000` (wordpiece, sentencepiece); `model_type="bpe"`
            (sentencepiece).

    Returns:
        The tokenizer, vocabulary built.

    Example:
    ```python
    tokenizer = build_tokenizer("word", train_sources, min_frequency=2)
    tokenizer.save("source_tokenizer.json")
    ```
    """
    if kind not in TOKENIZERS:
        raise ValueError(f"`kind` must be one of {list(TOKENIZERS)}. Received: kind={kind!r}")
    cls = TOKENIZERS[kind]
    constructor_names = [
        name for name in _parameters(cls.__init__) if name not in ("vocabulary", "proto")
    ]
    build_names = _parameters(cls.build_vocabulary)
    unknown = sorted(set(options) - set(constructor_names) - set(build_names))
    if unknown:
        raise ValueError(
            f"Unknown option(s) {unknown} for kind={kind!r}. Valid options: "
            f"{sorted(set(constructor_names) | set(build_names))}"
        )
    tokenizer = cls(**{name: options[name] for name in constructor_names if name in options})
    tokenizer.build_vocabulary(
        check_sentence_list(texts, "texts"),
        **{name: options[name] for name in build_names if name in options},
    )
    return tokenizer


def load_tokenizer(path):
    """Load a tokenizer written by `Tokenizer.save(path)`.

    Args:
        path: path of the JSON file.

    Returns:
        A `WordTokenizer`, `WordPieceTokenizer` or `SentencePieceTokenizer`, as saved.
    """
    with open(path, encoding="utf-8") as file:
        try:
            payload = json.load(file)
        except json.JSONDecodeError as error:
            raise ValueError(f"{path} is not a keras-rnmt tokenizer file: {error}") from error
        except UnicodeDecodeError as error:
            raise ValueError(f"{path} is not a keras-rnmt tokenizer file: invalid UTF-8 at "
                             f"byte {error.start + 1}") from None
    if not isinstance(payload, dict) or payload.get("format") != SAVE_FORMAT:
        raise ValueError(f"{path} is not a keras-rnmt tokenizer file (no format {SAVE_FORMAT!r})")
    if payload.get("version") != SAVE_VERSION:
        raise ValueError(
            f"{path} has tokenizer file version {payload.get('version')!r}; this keras-rnmt "
            f"reads version {SAVE_VERSION}"
        )
    class_name = payload.get("class_name")
    if class_name not in _CLASSES:
        raise ValueError(
            f"{path} holds class_name={class_name!r}; expected one of {list(_CLASSES)}"
        )
    return _CLASSES[class_name].from_config(payload["config"])
