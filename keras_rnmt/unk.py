"""UNK replacement (Yang et al. §3.3, after Luong et al. 2015b and Jean et al. 2015)."""

import numpy as np


def replace_unknown(tokens, source_tokens, attention, unk_token="<unk>", dictionary=None):
    """Replace each `<unk>` output by the source word it attends to most.

    Args:
        tokens: list of output tokens (without `</s>`).
        source_tokens: list of source words, aligned with the attention's columns (a final
            `</s>` column is never chosen).
        attention: array (>= len(tokens), len(source_tokens)): row j is the attention of
            output token j.
        unk_token: the unknown token's string.
        dictionary: optional dict source word -> translation, used when it has the word.

    Returns:
        A new list of tokens.
    """
    dictionary = dictionary or {}
    attention = np.asarray(attention)
    choosable = [i for i, word in enumerate(source_tokens) if word not in ("</s>", "<pad>")]
    output = list(tokens)
    for j, token in enumerate(tokens):
        if token != unk_token or not choosable:
            continue
        row = attention[j, choosable]
        word = source_tokens[choosable[int(np.argmax(row))]]
        output[j] = dictionary.get(word, word)
    return output


def check_word_tokenizers(source_tokenizer, target_tokenizer, what):
    """Raise unless both tokenizers are word tokenizers.

    UNK replacement copies whole source words into a text joined by spaces; subword pieces
    would stay unjoined (and a subword vocabulary leaves no unknown words to replace).
    `what` names the caller in the message.
    """
    from keras_rnmt.data.word_tokenizer import WordTokenizer

    for side, tokenizer in (("source", source_tokenizer), ("target", target_tokenizer)):
        if not isinstance(tokenizer, WordTokenizer):
            raise ValueError(
                f"{what} needs word tokenizers; the {side} tokenizer is "
                f"{type(tokenizer).__name__}, whose subword vocabulary leaves no unknown "
                "words to replace. Translate without UNK replacement.")


def load_dictionary(path):
    """Read a `source<TAB>target` (or whitespace-separated) dictionary file.

    Blank lines are skipped; a line without exactly 2 fields, or invalid UTF-8, is an error
    naming `path:line`.
    """
    from keras_rnmt.data import read_lines

    dictionary = {}
    for number, line in enumerate(read_lines(path), 1):
        if not line.strip():
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) != 2:
            raise ValueError(f"{path}:{number}: expected 2 fields (source, target), "
                             f"found {len(fields)}")
        dictionary[fields[0]] = fields[1]
    return dictionary
