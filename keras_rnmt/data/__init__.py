"""Data layer: reading corpora, tokenizers, and `tf.data` pipelines."""

from keras_rnmt.data.base_tokenizer import (
    BOS_ID,
    BOS_TOKEN,
    EOS_ID,
    EOS_TOKEN,
    PAD_ID,
    PAD_TOKEN,
    SPECIAL_TOKENS,
    UNK_ID,
    UNK_TOKEN,
    Tokenizer,
)
from keras_rnmt.data.batch_count import with_batch_count
from keras_rnmt.data.corpus import (
    CorpusError,
    FilterReport,
    filter_pairs,
    read_lines,
    read_parallel,
    read_tsv,
)
from keras_rnmt.data.pipeline import make_dataset, make_inference_batches
from keras_rnmt.data.subword import SentencePieceTokenizer, WordPieceTokenizer
from keras_rnmt.data.tokenizers import TOKENIZERS, build_tokenizer, load_tokenizer
from keras_rnmt.data.word_tokenizer import WordTokenizer

__all__ = [
    "BOS_ID",
    "BOS_TOKEN",
    "EOS_ID",
    "EOS_TOKEN",
    "PAD_ID",
    "PAD_TOKEN",
    "SPECIAL_TOKENS",
    "TOKENIZERS",
    "UNK_ID",
    "UNK_TOKEN",
    "CorpusError",
    "FilterReport",
    "SentencePieceTokenizer",
    "Tokenizer",
    "WordPieceTokenizer",
    "WordTokenizer",
    "build_tokenizer",
    "filter_pairs",
    "load_tokenizer",
    "make_dataset",
    "make_inference_batches",
    "read_lines",
    "read_parallel",
    "read_tsv",
    "with_batch_count",
]
