"""Every API that takes a list of sentences refuses a lone string, which would otherwise be
read as a list of its characters (a vocabulary, a corpus or a score per character)."""

import pytest

from keras_rnmt.data import build_tokenizer, filter_pairs
from keras_rnmt.evaluation import corpus_scores
from keras_rnmt.sentence_list import check_sentence_list

# Pure Python: the same under every backend.
pytestmark = pytest.mark.backends("torch")


def test_a_list_passes_unchanged_and_a_lone_string_names_the_argument():
    texts = ["a dog runs .", "two cats"]
    assert check_sentence_list(texts, "texts") is texts
    assert check_sentence_list((), "texts") == ()
    for lone in ("a dog runs .", b"a dog runs ."):
        with pytest.raises(TypeError) as info:
            check_sentence_list(lone, "texts")
        assert str(info.value) == (f"`texts` must be a list of sentences, not one "
                                   f"{type(lone).__name__}: {lone!r} (for one sentence, pass "
                                   "[sentence])")


@pytest.mark.parametrize("call,argument", [
    (lambda: build_tokenizer("word", "a dog runs", min_frequency=1), "texts"),
    (lambda: build_tokenizer("wordpiece", "a dog runs"), "texts"),
    (lambda: corpus_scores("ein hund", ["ein hund"]), "hypotheses"),
    (lambda: corpus_scores(["ein hund"], "ein hund"), "references"),
    (lambda: filter_pairs("a dog", "ein hund"), "sources"),
])
def test_each_caller_refuses_a_lone_string(call, argument):
    with pytest.raises(TypeError, match=f"^`{argument}` must be a list of sentences, not one str"):
        call()
