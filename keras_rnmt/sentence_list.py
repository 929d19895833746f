"""The check every API that takes a list of sentences makes first."""


def check_sentence_list(texts, argument):
    """Raise a TypeError if `texts`, meant as a list of sentences, is one `str` or `bytes`.

    Iterated, a lone string is a list of its characters: a translation, a vocabulary or a
    score per character, and no error. Returns `texts` otherwise, unchanged.

    Args:
        texts: the argument as given.
        argument: its name, for the message.
    """
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"`{argument}` must be a list of sentences, not one "
                        f"{type(texts).__name__}: {texts!r:.60} (for one sentence, pass "
                        "[sentence])")
    return texts
