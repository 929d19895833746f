import pytest

from keras_rnmt.datasets import toy_rules, toy_splits, toy_translate_sentence, toy_translation

RULES = toy_rules()
WORD_CLASS = {word: name for name, words in RULES["classes"].items() for word in words}


def test_hand_checked_translation():
    # ka=ta; "bela jiro" is adjective + noun -> "hund bal" (fertility 2) then "rond";
    # the particle ze vanishes; gami -> "hat gesen"; lo=se; fero=katt.
    assert toy_translate_sentence("ka bela jiro ze gami lo fero") == [
        "ta", "hund", "bal", "rond", "hat", "gesen", "se", "katt",
    ]  # fmt: skip
    assert toy_translate_sentence(["mi", "kuta", "boka"]) == ["ru", "sol", "ser"]


def test_unknown_word():
    with pytest.raises(ValueError, match=r"Not toy source words: \['cat'\]\. Valid words: \["):
        toy_translate_sentence("ka cat boka")


def test_rules_structure():
    classes = RULES["classes"]
    assert set(classes) == {"determiner", "adjective", "noun", "verb", "preposition", "particle"}
    source_words = [word for words in classes.values() for word in words]
    assert len(source_words) == len(set(source_words)) == 39
    assert set(RULES["lexicon"]) == set(source_words)
    fertility = {word: len(target) for word, target in RULES["lexicon"].items()}
    assert {fertility[word] for word in classes["particle"]} == {0}
    assert sorted(word for word, count in fertility.items() if count == 2) == [
        "gami", "jiro", "lipa", "mavi", "sumo",
    ]  # fmt: skip
    target_words = [word for target in RULES["lexicon"].values() for word in target]
    assert len(target_words) == len(set(target_words))  # the mapping is invertible
    assert RULES["reorder"] == ("adjective", "noun")
    assert RULES["length_range"] == (3, 12)


def test_determinism():
    assert toy_translation(50, seed=7) == toy_translation(50, seed=7)
    assert toy_translation(50, seed=7) != toy_translation(50, seed=8)


def test_generated_pairs_follow_the_rules():
    sources, targets = toy_translation(500, seed=0)
    assert len(sources) == len(targets) == 500
    reordered = dropped = doubled = 0
    for source, target in zip(sources, targets):
        words = source.split()
        assert 3 <= len(words) <= 12
        assert target.split() == toy_translate_sentence(words)
        classes = [WORD_CLASS[word] for word in words]
        assert classes[0] == "determiner"
        assert "verb" in classes
        reordered += any(a == "adjective" and b == "noun" for a, b in zip(classes, classes[1:]))
        dropped += "particle" in classes
        doubled += any(len(RULES["lexicon"][word]) == 2 for word in words)
    # Reordering and both kinds of fertility occur often.
    assert min(reordered, dropped, doubled) > 50


def test_reordering_in_a_generated_pair():
    sources, targets = toy_translation(200, seed=1)
    lexicon = RULES["lexicon"]
    for source, target in zip(sources, targets):
        words = source.split()
        if WORD_CLASS[words[1]] == "adjective" and len(lexicon[words[2]]) == 1:
            adjective, noun = lexicon[words[1]][0], lexicon[words[2]][0]
            assert target.split()[1:3] == [noun, adjective]
            return
    pytest.fail("no sentence starts with determiner + adjective + noun")


def test_length_range_and_unique():
    sources, _ = toy_translation(300, seed=2, min_length=8, max_length=9, unique=True)
    assert {len(source.split()) for source in sources} == {8, 9}
    assert len(set(sources)) == 300


def test_bad_lengths_and_impossible_unique():
    with pytest.raises(ValueError) as info:
        toy_translation(10, min_length=2)
    assert str(info.value) == "`min_length` must be an integer in [3, 12]. Received: min_length=2"
    with pytest.raises(ValueError) as info:
        toy_translation(10, min_length=5, max_length=4)
    assert str(info.value) == (
        "`max_length` must be an integer in [min_length=5, 12]. Received: max_length=4"
    )
    # determiner + noun + verb: only 3 * 14 * 8 = 336 distinct 3-word sentences.
    with pytest.raises(ValueError, match=r"Could generate only 336 of 400 unique sentences"):
        toy_translation(400, min_length=3, max_length=3, unique=True)


def test_splits_are_disjoint():
    splits = toy_splits(seed=0, train_size=600, val_size=50, test_size=50)
    assert {name: len(pair[0]) for name, pair in splits.items()} == {
        "train": 600, "val": 50, "test": 50,
    }  # fmt: skip
    train, val, test = (set(splits[name][0]) for name in ("train", "val", "test"))
    assert len(train) == 600 and not train & val and not train & test and not val & test
    assert toy_splits(seed=0, train_size=600, val_size=50, test_size=50) == splits
