"""A synthetic language pair for debugging NMT end to end in minutes.

The source language has 39 made-up words in six classes; sentences follow

    sentence    -> NP [PARTICLE] VERB [NP] [PREPOSITION NP] [PARTICLE]
    NP          -> DETERMINER [ADJECTIVE] NOUN

with at most one particle, giving 3 to 12 words. The target side is produced by
`toy_translate_sentence`, left to right:

1. Lexical mapping: every source word has a fixed translation (`toy_rules()["lexicon"]`).
2. Local reordering: "ADJECTIVE NOUN" becomes "NOUN' ADJECTIVE'" (as in French).
3. Fertility: particles produce no target word; the nouns `jiro`, `mavi`, `sumo` and
   the verbs `gami`, `lipa` produce two target words each.

Example: "ka bela jiro ze gami lo fero" -> "ta hund bal rond hat gesen se katt"
(`bela jiro` is adjective + noun, so swapped; `jiro` and `gami` have fertility 2;
the particle `ze` disappears).

`toy_splits()` gives disjoint train/val/test sets (6,000/300/300 by default). A 1-layer
LSTM attention model of ~128 units learns the task to near-perfect BLEU in minutes on
a CPU, so a failure to learn it points at a bug, not at capacity.
"""

import numpy as np

CLASSES = {
    "determiner": ("ka", "lo", "mi"),
    "adjective": ("bela", "doru", "fani", "gavo", "hiko", "jume", "kipa", "lasu"),
    "noun": (
        "bano",
        "cedi",
        "dapu",
        "fero",
        "gilo",
        "hamu",
        "jiro",
        "kuta",
        "mavi",
        "nolu",
        "pesa",
        "riko",
        "sumo",
        "tavi",
    ),  # fmt: skip
    "verb": ("boka", "dira", "fesu", "gami", "hola", "kemu", "lipa", "mero"),
    "preposition": ("na", "po", "su"),
    "particle": ("ze", "vu", "xi"),
}

LEXICON = {
    # determiners
    "ka": ("ta",), "lo": ("se",), "mi": ("ru",),
    # adjectives
    "bela": ("rond",), "doru": ("vel",), "fani": ("smor",), "gavo": ("tik",),
    "hiko": ("plen",), "jume": ("gud",), "kipa": ("ferm",), "lasu": ("sark",),
    # nouns (jiro, mavi, sumo: fertility 2)
    "bano": ("hus",), "cedi": ("bok",), "dapu": ("stol",), "fero": ("katt",),
    "gilo": ("fisk",), "hamu": ("tre",), "jiro": ("hund", "bal"), "kuta": ("sol",),
    "mavi": ("kas", "tel"), "nolu": ("berg",), "pesa": ("vind",), "riko": ("stein",),
    "sumo": ("fen", "dor"), "tavi": ("blom",),
    # verbs (gami, lipa: fertility 2)
    "boka": ("ser",), "dira": ("tar",), "fesu": ("gir",), "gami": ("hat", "gesen"),
    "hola": ("bor",), "kemu": ("finn",), "lipa": ("wil", "gan"), "mero": ("spis",),
    # prepositions
    "na": ("ap",), "po": ("ob",), "su": ("ved",),
    # particles: fertility 0
    "ze": (), "vu": (), "xi": (),
}  # fmt: skip

WORD_CLASS = {word: name for name, words in CLASSES.items() for word in words}
MIN_LENGTH, MAX_LENGTH = 3, 12
# Give up on `unique=True` after this many draws in a row without a new sentence.
MAX_CONSECUTIVE_MISSES = 20000

# Probabilities of the optional parts of the grammar.
P_ADJECTIVE = 0.5
P_OBJECT = 0.6
P_PREPOSITIONAL_PHRASE = 0.4
P_PARTICLE_AFTER_SUBJECT = 0.2
P_PARTICLE_AT_END = 0.2


def toy_rules():
    """Return the rules of the toy language pair.

    Returns:
        dict with `"classes"` (class name -> tuple of source words), `"lexicon"`
        (source word -> tuple of 0, 1 or 2 target words), `"reorder"` (the pair of
        classes swapped on the target side) and `"length_range"` (min, max source words).
    """
    return {
        "classes": dict(CLASSES),
        "lexicon": dict(LEXICON),
        "reorder": ("adjective", "noun"),
        "length_range": (MIN_LENGTH, MAX_LENGTH),
    }


def toy_translate_sentence(words):
    """Translate a toy source sentence by the rules.

    Args:
        words: list of source words (or one space-separated str).

    Returns:
        list of target words.
    """
    if isinstance(words, str):
        words = words.split()
    unknown = [word for word in words if word not in LEXICON]
    if unknown:
        raise ValueError(f"Not toy source words: {unknown}. Valid words: {sorted(LEXICON)}")
    output = []
    index = 0
    while index < len(words):
        word = words[index]
        following = words[index + 1] if index + 1 < len(words) else None
        if WORD_CLASS[word] == "adjective" and following and WORD_CLASS[following] == "noun":
            output += LEXICON[following] + LEXICON[word]
            index += 2
        else:
            output += LEXICON[word]
            index += 1
    return output


def _pick(rng, word_class):
    words = CLASSES[word_class]
    return words[rng.integers(len(words))]


def _noun_phrase(rng):
    words = [_pick(rng, "determiner")]
    if rng.random() < P_ADJECTIVE:
        words.append(_pick(rng, "adjective"))
    words.append(_pick(rng, "noun"))
    return words


def _sentence(rng):
    words = _noun_phrase(rng)
    particle_after_subject = rng.random() < P_PARTICLE_AFTER_SUBJECT
    if particle_after_subject:
        words.append(_pick(rng, "particle"))
    words.append(_pick(rng, "verb"))
    if rng.random() < P_OBJECT:
        words += _noun_phrase(rng)
    if rng.random() < P_PREPOSITIONAL_PHRASE:
        words += [_pick(rng, "preposition")] + _noun_phrase(rng)
    if not particle_after_subject and rng.random() < P_PARTICLE_AT_END:
        words.append(_pick(rng, "particle"))
    return words


def toy_translation(
    num_examples=1000, seed=0, min_length=MIN_LENGTH, max_length=MAX_LENGTH, unique=False
):
    """Generate toy sentence pairs (deterministic for a given seed).

    Args:
        num_examples: int. Number of pairs. Defaults to 1000.
        seed: int. Seed of the `numpy.random.Generator`. Defaults to 0.
        min_length: int. Minimum source length in words, in [3, 12]. Defaults to 3.
        max_length: int. Maximum source length in words, in [min_length, 12].
            Defaults to 12.
        unique: bool. If `True`, no source sentence appears twice. Defaults to `False`.

    Returns:
        `(sources, targets)`, two lists of space-separated str.

    Example:
    ```python
    sources, targets = toy_translation(5, seed=1)
    ```
    """
    if not isinstance(num_examples, int) or num_examples < 0:
        raise ValueError(f"`num_examples` must be an integer >= 0. Received: {num_examples!r}")
    if not isinstance(min_length, int) or not MIN_LENGTH <= min_length <= MAX_LENGTH:
        raise ValueError(
            f"`min_length` must be an integer in [{MIN_LENGTH}, {MAX_LENGTH}]. "
            f"Received: min_length={min_length!r}"
        )
    if not isinstance(max_length, int) or not min_length <= max_length <= MAX_LENGTH:
        raise ValueError(
            f"`max_length` must be an integer in [min_length={min_length}, {MAX_LENGTH}]. "
            f"Received: max_length={max_length!r}"
        )
    rng = np.random.default_rng(seed)
    sources, targets, seen = [], [], set()
    misses = 0  # consecutive draws that gave no new pair
    while len(sources) < num_examples:
        if misses == MAX_CONSECUTIVE_MISSES:
            raise ValueError(
                f"Could generate only {len(sources)} of {num_examples} unique sentences "
                f"with {min_length} to {max_length} words; ask for fewer or widen the range"
            )
        words = _sentence(rng)
        source = " ".join(words)
        if not min_length <= len(words) <= max_length or (unique and source in seen):
            misses += 1
            continue
        misses = 0
        seen.add(source)
        sources.append(source)
        targets.append(" ".join(toy_translate_sentence(words)))
    return sources, targets


def toy_splits(seed=0, train_size=6000, val_size=300, test_size=300):
    """Disjoint train/val/test sets of the toy language pair.

    No source sentence occurs in two splits (nor twice in one).

    Args:
        seed: int. Defaults to 0.
        train_size: int. Defaults to 6000.
        val_size: int. Defaults to 300.
        test_size: int. Defaults to 300.

    Returns:
        dict `{"train": (sources, targets), "val": (...), "test": (...)}`.
    """
    sources, targets = toy_translation(train_size + val_size + test_size, seed=seed, unique=True)
    bounds = {"train": (0, train_size), "val": (train_size, train_size + val_size)}
    bounds["test"] = (train_size + val_size, train_size + val_size + test_size)
    return {name: (sources[lo:hi], targets[lo:hi]) for name, (lo, hi) in bounds.items()}
