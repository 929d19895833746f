"""`Translator`: the Python API for translating with a trained model (greedy or beam)."""

import dataclasses
import json
import os
import warnings

import keras
import numpy as np
from keras import ops

from keras_rnmt.matmul_precision import matmul_precision
from keras_rnmt.precision import warn_if_emulated
from keras_rnmt.search import check_output_limits, check_positive_int, check_stop_rule
from keras_rnmt.search.compiled import compile_search, shared_programs
from keras_rnmt.search.constants import SearchConstants
from keras_rnmt.search.programs import search_programs
from keras_rnmt.search.shrinking import shrinking_beam_search
from keras_rnmt.sentence_list import check_sentence_list
from keras_rnmt.unk import check_word_tokenizers, replace_unknown


@dataclasses.dataclass
class Translation:
    """One translation.

    Attributes:
        text: the detokenised output.
        score: the search score (length-normalised log-probability for beam search).
        tokens: output tokens, without `</s>`.
        source_tokens: source tokens the model saw (with `</s>`).
        attention: float32 (len(tokens) + 1, len(source_tokens)) weights, the row of `</s>`
            last; None for a model without attention.
        n_best: alternatives as `Translation`s, best first (n_best > 1 only).
        ids: the output ids the search produced, `</s>` last when it produced one (one id
            per attention row).
    """

    text: str
    score: float
    tokens: list
    source_tokens: list
    attention: np.ndarray = None
    n_best: list = dataclasses.field(default_factory=list)
    ids: list = dataclasses.field(default_factory=list)


def load_model(path, dtype_policy=None):
    """`keras.saving.load_model(path)`, its layers built under `dtype_policy` if given (a
    `TranslationModel` rebuilds its layers from its config under the global policy), so a
    float32-trained model computes in e.g. "mixed_bfloat16" (weights stay float32)."""
    if dtype_policy is None:
        return keras.saving.load_model(path)
    previous = keras.config.dtype_policy()
    keras.config.set_dtype_policy(dtype_policy)  # a ValueError names the valid policies
    try:
        warn_if_emulated(dtype_policy)
        return keras.saving.load_model(path)
    finally:
        keras.config.set_dtype_policy(previous)


def _sentence_list(sentences):
    """`sentences` as a list of str: bytes decoded as UTF-8; anything else names its index."""
    texts = []
    for index, sentence in enumerate(check_sentence_list(sentences, "sentences")):
        if isinstance(sentence, bytes):
            try:
                sentence = sentence.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ValueError(f"sentences[{index}]: invalid UTF-8 ({error.reason})") from None
        elif not isinstance(sentence, str):
            raise TypeError(f"sentences[{index}] is {type(sentence).__name__}, not str: "
                            f"{sentence!r:.60}")
        texts.append(sentence)
    return texts


class Translator:
    """Translate raw strings with a model and its two tokenizers.

    Exactly one result per input, in input order; an empty (or blank) input gives an empty
    translation without running the model. Inputs are sorted by length into batches so
    padding stays small, then put back in order.

    Args:
        model: a `TranslationModel` (or any model with `search_state`/`search_step`).
        source_tokenizer, target_tokenizer: keras-rnmt tokenizers.
        beam_size: int. 1 = greedy search. Defaults to 5.
        length_penalty: float. GNMT α. Defaults to 1.0.
        coverage_penalty: float. GNMT β. Defaults to 0.
        max_length_a, max_length_b: the output limit is ⌈a·|source| + b⌉ tokens, |source|
            counting the source's `</s>` (fairseq's `--max-len-a/b`). Defaults to 1.5 and 10;
            both must be >= 0 and allow one token (a > 0 or b >= 1).
        batch_size: int. Sentences per search batch. Defaults to 64.
        replace_unk: bool. Replace `<unk>` outputs by the most-attended source word (or its
            entry in `unk_dictionary`). Defaults to False.
        unk_dictionary: dict source word -> target word, or None.
        stop_rule: str. Beam search's stopping rule: "current" (stop a sentence once its
            best hypothesis has ended) or "bound" (exact); see `keras_rnmt.search.beam`.
            Defaults to "current".
        jit_compile: bool. Under TensorFlow, compile the search with XLA
            (`tf.function(jit_compile=True)`): on this project's CPUs it decodes test2016
            1.1-1.3x faster once compiled, and compiles each batch shape about twice as long
            (pays off on large files). Without it, TensorFlow runs each batch's beam search
            as one graph (`graph_shrinking_beam_search`); with it, as under JAX, Python
            drives the search's chunks. JAX always compiles with XLA; PyTorch decodes
            eagerly, so there it is an error. Defaults to False.

    Example (an untrained model: the words are random, the contract is not):

    >>> from keras_rnmt.data import build_tokenizer
    >>> from keras_rnmt.models import ModelConfig, build_model
    >>> source = build_tokenizer("word", ["a dog runs", "the cat sleeps"], min_frequency=1)
    >>> target = build_tokenizer("word", ["ein hund läuft", "die katze schläft"],
    ...                          min_frequency=1)
    >>> model = build_model(ModelConfig(
    ...     source_vocab_size=source.vocabulary_size(), embedding_dim=8, encoder_units=8,
    ...     target_vocab_size=target.vocabulary_size(), decoder_units=16, attention="recurrent"))
    >>> translator = Translator(model, source, target, beam_size=3)
    >>> results = translator.translate(["a dog runs", "", "the cat"])
    >>> len(results), results[1].text          # one per input, in order; "" for ""
    (3, '')
    >>> results[0].attention.shape[1]            # weights over "a dog runs </s>"
    4
    """

    def __init__(self, model, source_tokenizer, target_tokenizer, beam_size=5,
                 length_penalty=1.0, coverage_penalty=0.0, max_length_a=1.5, max_length_b=10,
                 batch_size=64, replace_unk=False, unk_dictionary=None, stop_rule="current",
                 jit_compile=False):
        # Checked here: beam_size 1 runs greedy search, which has no beam to check.
        check_positive_int("beam_size", beam_size)
        check_positive_int("batch_size", batch_size)
        self.model = model
        self.source_tokenizer = source_tokenizer
        self.target_tokenizer = target_tokenizer
        self.beam_size = int(beam_size)
        self.length_penalty = length_penalty
        self.coverage_penalty = coverage_penalty
        check_output_limits(max_length_a, max_length_b)
        self.max_length_a = max_length_a
        self.max_length_b = max_length_b
        self.batch_size = int(batch_size)
        self.replace_unk = replace_unk
        self.unk_dictionary = unk_dictionary or {}
        if replace_unk:
            check_word_tokenizers(source_tokenizer, target_tokenizer, "replace_unk=True")
        check_stop_rule(stop_rule)
        self.stop_rule = stop_rule
        if jit_compile and keras.backend.backend() == "torch":
            raise ValueError("jit_compile=True needs the TensorFlow or JAX backend: PyTorch "
                             "decodes eagerly. Received KERAS_BACKEND=torch")
        self.jit_compile = bool(jit_compile)
        self._search_constants = SearchConstants()  # computed once for many batches
        self._warned_no_attention = False

    @classmethod
    def from_run(cls, run_dir, model_file="best.keras", dtype_policy=None, **kwargs):
        """Load the model and tokenizers a training run wrote to `run_dir`.

        `dtype_policy` (e.g. "mixed_bfloat16") computes the search in that Keras dtype
        policy, whatever the policy of training: the saved weights are float32 either way.
        On a CPU with AVX-512 BF16, "mixed_bfloat16" decodes faster under TensorFlow and
        PyTorch (not JAX), with slightly different hypotheses. Defaults to the global policy.
        """
        from keras_rnmt.data import load_tokenizer

        path = os.path.join(run_dir, model_file)
        if not os.path.exists(path):
            raise FileNotFoundError(f"No model at {path} (is {run_dir} a keras-rnmt run directory?)")
        model = load_model(path, dtype_policy)
        source = load_tokenizer(os.path.join(run_dir, "source_tokenizer.json"))
        target = load_tokenizer(os.path.join(run_dir, "target_tokenizer.json"))
        settings = {}
        config_path = os.path.join(run_dir, "config.json")
        if os.path.exists(config_path):
            with open(config_path) as f:
                train = json.load(f)
            settings = {"beam_size": train.get("beam_size", 5),
                        "length_penalty": train.get("length_penalty", 1.0)}
        return cls(model, source, target, **{**settings, **kwargs})

    # ------------------------------------------------------------------------------------
    def translate(self, sentences, n_best=1):
        """Translate a list of strings; returns one `Translation` per input, in order.

        Each sentence is a `str`, or UTF-8 `bytes` (as a string tensor's `.numpy()` gives);
        a lone string is an error, not a list of characters to translate.
        """
        if n_best > max(1, self.beam_size):
            raise ValueError(f"n_best ({n_best}) must be <= beam_size ({self.beam_size})")
        sentences = _sentence_list(sentences)
        results = [None] * len(sentences)
        for index, sentence in enumerate(sentences):
            if not sentence.strip():
                results[index] = Translation("", 0.0, [], [], None)
        nonempty = [i for i, result in enumerate(results) if result is None]
        # One tokenizer call for all sentences: per sentence, it cost 15% of a beam-5 pass.
        encoded = dict(zip(nonempty, self._encode_all([sentences[i] for i in nonempty])))
        order = sorted(encoded, key=lambda i: len(encoded[i]))
        for start in range(0, len(order), self.batch_size):
            chunk = order[start:start + self.batch_size]
            for index, result in zip(chunk, self._translate_batch([encoded[i] for i in chunk],
                                                                  [sentences[i] for i in chunk],
                                                                  n_best)):
                results[index] = result
        return results

    def __call__(self, sentences, n_best=1):
        return [result.text for result in self.translate(sentences, n_best=n_best)]

    def unk_replaced(self, translation):
        """The text `replace_unk=True` gives for `translation`, without searching again.

        Each `<unk>` in `translation.tokens` becomes the source word it attends to most (or
        that word's `unk_dictionary` entry), read from `translation.attention`; the search
        is the same with or without replacement, so one `translate` serves both scorings.

        Args:
            translation: a `Translation` from this translator's `translate`.

        Returns:
            str: its text with unknown words replaced; `translation.text` unchanged when it
            has no attention (a model without attention, or an empty input).
        """
        check_word_tokenizers(self.source_tokenizer, self.target_tokenizer, "unk_replaced")
        if translation.attention is None:
            return translation.text
        return " ".join(self._replace_unknowns(translation.tokens, translation.source_tokens,
                                               translation.attention))

    def attention_states(self, sentence, translation):
        """The attention state at every output step of `translation`, replayed teacher-forced.

        Args:
            sentence: the source string `translation` was made from.
            translation: a `Translation` of it (its `ids`).

        Returns:
            The attention's state tuple of float32 numpy arrays, each
            `(len(translation.ids), len(translation.source_tokens), ...)`: row j is the
            state that scored output j (see `TranslationModel.attention_states`).
        """
        if not hasattr(self.model, "attention_states"):
            raise ValueError(f"{type(self.model).__name__} has no attention state to read")
        if not translation.ids:
            return ()
        source = np.array([self._encode(sentence)], dtype="int32")
        target_in = np.array([[self.target_tokenizer.bos_id] + translation.ids[:-1]], "int32")
        states = self.model.attention_states(source, target_in)
        return tuple(np.asarray(ops.convert_to_numpy(leaf)[0], "float32") for leaf in states)

    # ------------------------------------------------------------------------------------
    def _encode(self, sentence):
        return self._encode_all([sentence])[0]

    def _encode_all(self, sentences):
        """Source ids of every sentence, each followed by `</s>`."""
        if not sentences:
            return []
        eos = self.source_tokenizer.eos_id
        return [ids + [eos] for ids in self.source_tokenizer.tokenize(sentences).to_list()]

    def _translate_batch(self, batch_ids, batch_sentences, n_best):
        # Pad to a multiple of 8 so a few compiled search programs serve every batch.
        length = -(-max(len(ids) for ids in batch_ids) // 8) * 8
        source = np.zeros((len(batch_ids), length), dtype="int32")
        for row, ids in enumerate(batch_ids):
            source[row, :len(ids)] = ids
        lengths = np.array([len(ids) for ids in batch_ids], dtype="int32")
        max_length = np.ceil(self.max_length_a * lengths + self.max_length_b).astype("int32")
        tokens, scores, attention = self._search(source, max_length, n_best)
        if self.replace_unk and attention is None and not self._warned_no_attention:
            self._warned_no_attention = True
            warnings.warn(
                f"replace_unk=True has no effect with {type(self.model).__name__} "
                f"(attention={getattr(getattr(self.model, 'config', None), 'attention', None)!r}):"
                " its search returns no attention weights to pick the source word from; "
                "<unk> outputs are kept", stacklevel=3)
        results = []
        all_source_tokens = self._source_tokens(batch_sentences, batch_ids)
        for row, source_tokens in enumerate(all_source_tokens):
            hypotheses = [
                self._hypothesis(tokens[row, k], scores[row, k],
                                 None if attention is None else attention[row, k],
                                 source_tokens)
                for k in range(tokens.shape[1])
            ]
            best = hypotheses[0]
            best.n_best = hypotheses if n_best > 1 else []
            results.append(best)
        self._detokenize_all([h for best in results for h in (best.n_best or [best])])
        return results

    def _source_tokens(self, sentences, batch_ids):
        """The source tokens of every sentence (its words where they match its ids) + `</s>`."""
        split = [None] * len(sentences)
        if hasattr(self.source_tokenizer, "split_words"):
            split = [[w.decode() if isinstance(w, bytes) else w for w in row]
                     for row in self.source_tokenizer.split_words(list(sentences)).to_list()]
        tokens = []
        for words, ids in zip(split, batch_ids):
            if words is None or len(words) != len(ids) - 1:
                words = [self.source_tokenizer.id_to_token(i) for i in ids[:-1]]
            tokens.append(words + ["</s>"])
        return tokens

    def _hypothesis(self, ids, score, attention, source_tokens):
        ids = [int(i) for i in ids]
        eos = self.target_tokenizer.eos_id
        length = ids.index(eos) + 1 if eos in ids else len([i for i in ids if i != 0])
        ids = ids[:length]
        body = [i for i in ids if i != eos]
        tokens = [self.target_tokenizer.id_to_token(i) for i in body]
        weights = None
        if attention is not None:
            weights = np.asarray(attention[:length, :len(source_tokens)], dtype="float32")
        if self.replace_unk and weights is not None:
            tokens = self._replace_unknowns(tokens, source_tokens, weights)
            text = " ".join(tokens)
        else:
            text = None  # detokenized for the whole batch at once by `_detokenize_all`
        return Translation(text, float(score), tokens, source_tokens, weights, ids=ids)

    def _replace_unknowns(self, tokens, source_tokens, weights):
        unk = self.target_tokenizer.id_to_token(self.target_tokenizer.unk_id)
        return replace_unknown(tokens, source_tokens, weights, unk_token=unk,
                               dictionary=self.unk_dictionary)

    def _detokenize_all(self, translations):
        """Set the text of every translation that has none, in one tokenizer call (one call
        per sentence cost 10% of a beam-5 pass over test2016)."""
        pending = [t for t in translations if t.text is None]
        if not pending:
            return
        ids = np.zeros((len(pending), max(1, max(len(t.ids) for t in pending))), "int32")
        for row, translation in enumerate(pending):
            ids[row, :len(translation.ids)] = translation.ids
        texts = self.target_tokenizer.detokenize(ids)
        texts = texts.numpy() if hasattr(texts, "numpy") else np.asarray(texts)
        for translation, text in zip(pending, texts.reshape(-1), strict=True):
            translation.text = _as_str(text)

    def _search(self, source, max_length, n_best):
        """Run search on one padded batch; returns numpy (tokens (B,K,T), scores (B,K), attn)."""
        # A static number of steps, rounded up so a few compiled programs serve all batches.
        max_steps = int(-(-int(max_length.max()) // 16) * 16)
        # Every setting the programs are traced with: another translator of this model with
        # the same ones shares them (`shared_programs`).
        in_graph = self._search_in_graph()
        key = ("translator", self.beam_size, n_best, max_steps, self.length_penalty,
               self.coverage_penalty, self.stop_rule, self.jit_compile, in_graph,
               self.target_tokenizer.bos_id, self.target_tokenizer.eos_id, matmul_precision(),
               keras.config.dtype_policy().name)
        programs = shared_programs(self.model)
        if key not in programs:
            programs[key] = [compile_search(fn, self.jit_compile)
                             for fn in self._search_fns(n_best, max_steps, in_graph)]
        constants = self._search_constants(self.model)
        if self.beam_size > 1 and not in_graph:
            start, advance = programs[key]
            return shrinking_beam_search(
                lambda: start(self.model, source, max_length, constants),
                lambda carry, until: advance(self.model, carry, until, constants),
                self.beam_size)
        result = programs[key][0](self.model, source, max_length, constants)
        return tuple(None if x is None else ops.convert_to_numpy(x) for x in result)

    def _search_in_graph(self):
        """Whether beam search runs as one graph per batch (`graph_shrinking_beam_search`):
        under TensorFlow without XLA, whose kernels take the shrinking batch as it comes.
        Elsewhere Python drives the chunks (`shrinking_beam_search`), padding the batch to
        a few sizes so that XLA compiles few programs."""
        return keras.backend.backend() == "tensorflow" and not self.jit_compile

    def _search_fns(self, n_best, max_steps, in_graph):
        return search_programs(
            self.model, self.target_tokenizer.bos_id, self.target_tokenizer.eos_id,
            max_steps, beam_size=self.beam_size, n_best=n_best,
            length_penalty=self.length_penalty, coverage_penalty=self.coverage_penalty,
            stop_rule=self.stop_rule, in_graph=in_graph)


def _as_str(text):
    if hasattr(text, "numpy"):
        text = text.numpy()
    if isinstance(text, np.ndarray):
        text = text.reshape(-1)[0]
    if isinstance(text, (list, tuple)):
        text = text[0]
    return text.decode("utf-8") if isinstance(text, bytes) else str(text)
