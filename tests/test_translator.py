"""`Translator`: order and count preserved, empty lines, long lines, greedy == beam 1."""

import numpy as np
import pytest
from keras import ops
from run_helpers import SOURCES, TARGETS, tiny_parts

from keras_rnmt.search import beam_search, greedy_search
from keras_rnmt.search.compiled import shared_programs
from keras_rnmt.translator import Translation, Translator


@pytest.fixture(scope="module")
def translator_parts():
    return tiny_parts()


def test_one_output_per_input_in_order_with_empty_and_300_word_lines(translator_parts):
    model, source_tokenizer, target_tokenizer = translator_parts
    translator = Translator(model, source_tokenizer, target_tokenizer, beam_size=2,
                            batch_size=2, max_length_a=1.0, max_length_b=5)
    long_line = " ".join(["dog"] * 300)
    inputs = ["a dog runs .", "", "   ", long_line, "the cat sleeps", ""]
    results = translator.translate(inputs)
    assert len(results) == len(inputs)
    assert [r.text for r in results][1:3] == ["", ""] and results[5].text == ""
    assert results[3].attention.shape[1] == 301  # 300 words + </s>
    # Each sentence alone gives the same output as in the batch: order was restored.
    alone = [translator.translate([line])[0].text for line in inputs]
    assert alone == [r.text for r in results]


def test_beam_size_one_equals_greedy_on_the_model(translator_parts):
    model, source_tokenizer, _ = translator_parts
    source = np.zeros((4, 8), "int32")
    for row, sentence in enumerate(SOURCES):
        ids = source_tokenizer.tokenize([sentence]).to_list()[0] + [3]
        source[row, :len(ids)] = ids
    common = dict(batch_size=4, bos_id=2, eos_id=3, max_length=12,
                  source_mask=ops.not_equal(source, 0))
    greedy = greedy_search(model.search_step, model.search_state(source), **common)
    beam = beam_search(model.search_step, model.search_state(source), beam_size=1, **common)
    np.testing.assert_array_equal(ops.convert_to_numpy(beam.tokens)[:, 0],
                                  ops.convert_to_numpy(greedy.tokens))
    np.testing.assert_allclose(ops.convert_to_numpy(beam.log_probs)[:, 0],
                               ops.convert_to_numpy(greedy.log_probs), rtol=1e-5)


def test_n_best_and_attention_rows(translator_parts):
    model, source_tokenizer, target_tokenizer = translator_parts
    translator = Translator(model, source_tokenizer, target_tokenizer, beam_size=3)
    result = translator.translate(["a dog runs ."], n_best=3)[0]
    assert len(result.n_best) == 3
    scores = [h.score for h in result.n_best]
    assert scores == sorted(scores, reverse=True)
    assert result.source_tokens == ["a", "dog", "runs", ".", "</s>"]
    assert result.attention.shape == (len(result.tokens) + 1, 5)
    np.testing.assert_allclose(result.attention.sum(-1), 1.0, atol=1e-5)
    with pytest.raises(ValueError, match=r"n_best \(4\) must be <= beam_size \(3\)"):
        translator.translate(["a"], n_best=4)


def test_stop_rules_and_a_bad_one(translator_parts):
    """Both stop rules translate every line; an unknown rule names the valid ones."""
    model, source_tokenizer, target_tokenizer = translator_parts
    lines = ["a b c", "", "c b a a b"]
    for rule in ("current", "bound"):
        translator = Translator(model, source_tokenizer, target_tokenizer, beam_size=3,
                                stop_rule=rule)
        outputs = translator(lines)
        assert len(outputs) == 3 and outputs[1] == ""
    with pytest.raises(ValueError, match="Unknown stop_rule 'exact'. Valid choices: 'bound'"):
        Translator(model, source_tokenizer, target_tokenizer, stop_rule="exact")


def test_inputs_are_a_list_of_str_or_utf8_bytes(translator_parts):
    translator = Translator(*translator_parts, beam_size=2)
    lines = ["a b c", "c b a a b"]
    expected = translator(lines)
    assert translator([line.encode() for line in lines]) == expected  # a string tensor's values
    assert translator(np.array(lines)) == expected
    # A lone string once became a translation per character.
    with pytest.raises(TypeError, match=r"^`sentences` must be a list of sentences, not one "
                                        r"str: 'a b c' \(for one sentence, pass \[sentence\]\)$"):
        translator.translate("a b c")
    with pytest.raises(TypeError, match=r"^sentences\[1\] is NoneType, not str: None$"):
        translator.translate(["a b c", None])
    with pytest.raises(ValueError, match=r"^sentences\[0\]: invalid UTF-8 \(invalid start byte\)$"):
        translator.translate([b"\xff a"])


@pytest.mark.parametrize("name,value", [("beam_size", 0), ("beam_size", -2), ("beam_size", 2.0),
                                        ("beam_size", True), ("batch_size", 0)])
def test_a_bad_beam_or_batch_size_is_refused(translator_parts, name, value):
    # A beam of 0 or less once ran greedy search without a word.
    with pytest.raises(ValueError, match=rf"^{name} must be a positive int; received "
                                         rf"{name}={value!r}$"):
        Translator(*translator_parts, **{name: value})


# Under TensorFlow only: JAX compiles its search with XLA whatever `jit_compile` says, so
# there both translators would run the same program (15 s of the JAX pass).
@pytest.mark.backends("tensorflow")
@pytest.mark.parametrize("beam_size", [1, 3], ids=["greedy", "beam"])
def test_the_search_compiled_with_xla_gives_the_same_translations(translator_parts, beam_size):
    model, source_tokenizer, target_tokenizer = translator_parts
    lines = ["a dog runs .", "", "the cat sleeps", "a bird sings on a tree . two dogs play ."]
    outputs = {}
    for jit_compile in (False, True):
        translator = Translator(model, source_tokenizer, target_tokenizer, beam_size=beam_size,
                                batch_size=2, jit_compile=jit_compile)
        outputs[jit_compile] = translator.translate(lines)
    for plain, compiled in zip(outputs[False], outputs[True], strict=True):
        assert compiled.text == plain.text and compiled.tokens == plain.tokens
        np.testing.assert_allclose(compiled.score, plain.score, rtol=1e-5)


@pytest.mark.tensorflow_only
def test_the_graph_loop_gives_the_host_loops_hypotheses(translator_parts):
    """Under TensorFlow a batch's beam search is one graph (`graph_shrinking_beam_search`);
    the chunks driven from Python (`shrinking_beam_search`, what JAX, XLA and PyTorch run)
    give the same n-best lists, scores and attention."""
    lines = ["a dog runs .", "", "the cat sleeps", "a bird sings on a tree . two dogs play .",
             "two dogs", "a cat runs on a tree"]
    outputs = {}
    for in_graph in (True, False):
        translator = Translator(*translator_parts, beam_size=3, batch_size=4)
        assert translator._search_in_graph()
        translator._search_in_graph = lambda in_graph=in_graph: in_graph
        outputs[in_graph] = translator.translate(lines, n_best=3)
    for graph, host in zip(outputs[True], outputs[False], strict=True):
        assert len(graph.n_best) == len(host.n_best)
        for g, h in zip(graph.n_best or [graph], host.n_best or [host], strict=True):
            assert g.text == h.text and g.ids == h.ids
            np.testing.assert_allclose(g.score, h.score, rtol=1e-6)
            if h.attention is None:
                assert g.attention is None
            else:
                np.testing.assert_allclose(g.attention, h.attention, rtol=1e-6, atol=1e-7)


@pytest.mark.backends("torch")
def test_xla_search_under_pytorch_is_an_error(translator_parts):
    with pytest.raises(ValueError, match="jit_compile=True needs the TensorFlow or JAX"):
        Translator(*translator_parts, jit_compile=True)


def test_unk_replacement_without_attention_warns_once_and_keeps_the_outputs():
    model, source_tokenizer, target_tokenizer = tiny_parts(attention="none")
    plain = Translator(model, source_tokenizer, target_tokenizer, beam_size=2)
    replacing = Translator(model, source_tokenizer, target_tokenizer, beam_size=2,
                           replace_unk=True, batch_size=1)
    with pytest.warns(UserWarning, match="replace_unk=True has no effect .*'none'") as caught:
        outputs = replacing(SOURCES[:2])  # two batches, one warning
    assert len([w for w in caught if "replace_unk" in str(w.message)]) == 1
    assert outputs == plain(SOURCES[:2])


def test_unk_replaced_reads_the_attention_of_a_translation(translator_parts):
    """Hand-made case: <unk> attends most to "zebra" (0.7 > 0.2, 0.1); "</s>" never wins."""
    model, source_tokenizer, target_tokenizer = translator_parts
    attention = np.array([[0.9, 0.05, 0.05], [0.2, 0.7, 0.1], [0.1, 0.1, 0.8]], "float32")
    translation = Translation("a <unk>", -1.0, ["a", "<unk>"], ["ein", "zebra", "</s>"],
                              attention)
    plain = Translator(model, source_tokenizer, target_tokenizer)
    assert plain.unk_replaced(translation) == "a zebra"
    dictionary = Translator(model, source_tokenizer, target_tokenizer,
                            unk_dictionary={"zebra": "Zebra"})
    assert dictionary.unk_replaced(translation) == "a Zebra"
    no_attention = Translation("a <unk>", -1.0, ["a", "<unk>"], ["ein", "</s>"])
    assert plain.unk_replaced(no_attention) == "a <unk>"


def test_unk_replaced_gives_what_a_replacing_translator_gives():
    """One search serves both scorings: `unk_replaced` of a plain translator's output equals
    a `replace_unk=True` translator's output (a bias makes the model emit <unk>)."""
    model, source_tokenizer, target_tokenizer = tiny_parts()
    bias = model.decoder.output_layer.bias
    boost = np.zeros(bias.shape, "float32")
    boost[target_tokenizer.unk_id] = 5.0
    bias.assign(ops.convert_to_numpy(bias) + boost)
    lines = [*SOURCES, ""]
    options = dict(beam_size=3, max_length_a=1.0, max_length_b=2)
    plain = Translator(model, source_tokenizer, target_tokenizer, **options)
    replacing = Translator(model, source_tokenizer, target_tokenizer, replace_unk=True,
                           **options)
    translations = plain.translate(lines)
    assert sum(t.tokens.count("<unk>") for t in translations) >= len(SOURCES)
    replaced = [plain.unk_replaced(t) for t in translations]
    assert replaced == replacing(lines) and replaced[-1] == ""
    assert not any("<unk>" in text for text in replaced)


def test_texts_detokenized_in_one_call_match_each_hypothesis_ids(translator_parts):
    model, source_tokenizer, target_tokenizer = translator_parts
    translator = Translator(model, source_tokenizer, target_tokenizer, beam_size=3)
    results = translator.translate(SOURCES, n_best=2)
    for result in results:
        assert len(result.n_best) == 2 and result.n_best[0] is result
        for hypothesis in result.n_best:
            alone = target_tokenizer.detokenize(np.array([hypothesis.ids], "int32"))
            assert hypothesis.text == alone.numpy().reshape(-1)[0].decode()


def test_from_run_in_bfloat16_builds_bf16_layers_and_restores_the_policy(translator_parts,
                                                                         tmp_path, monkeypatch):
    import contextlib

    import keras
    from run_helpers import save_run

    from keras_rnmt.search import programs

    model, source_tokenizer, target_tokenizer = translator_parts
    run_dir = save_run(str(tmp_path / "run"), model, source_tokenizer, target_tokenizer)
    inputs = ["a dog runs .", "", "the cat sleeps"]
    full = Translator.from_run(run_dir, beam_size=2).translate(inputs)
    half = Translator.from_run(run_dir, beam_size=2, dtype_policy="mixed_bfloat16")
    assert keras.config.dtype_policy().name == "float32"  # the global policy is back
    assert half.model.decoder.output_layer.compute_dtype == "bfloat16"
    assert half.model.decoder.output_layer.kernel.dtype == "float32"  # weights stay float32
    results = half.translate(inputs)
    assert len(results) == 3 and results[1].text == ""
    # Weights cast once per search call give what a cast at every step gives.
    monkeypatch.setattr(programs, "cast_weights_once", lambda m: contextlib.nullcontext())
    shared_programs(half.model).clear()  # trace again, with the patched function
    every_step = half.translate(inputs)
    assert [r.text for r in every_step] == [r.text for r in results]
    np.testing.assert_array_equal([r.score for r in every_step], [r.score for r in results])
    assert len(full) == 3
    # The same weights: the logits agree up to bfloat16 rounding (8 mantissa bits).
    source, target = np.array([[4, 5, 6, 3]], "int32"), np.array([[2, 4, 5]], "int32")
    expected = ops.convert_to_numpy(model([source, target]))
    logits = ops.convert_to_numpy(ops.cast(half.model([source, target]), "float32"))
    np.testing.assert_allclose(logits, expected, atol=0.03 * max(1.0, np.abs(expected).max()))
    with pytest.raises(ValueError, match="mixed_bfloat16"):
        Translator.from_run(run_dir, dtype_policy="bfloat17")
    assert keras.config.dtype_policy().name == "float32"


def test_unk_replacement_with_subword_tokenizers_is_an_error_naming_the_tokenizer():
    # Replacement joins whole source words with spaces: WordPiece pieces would stay unjoined.
    from keras_rnmt.data import WordPieceTokenizer

    model, source_tokenizer, _ = tiny_parts()
    pieces = WordPieceTokenizer()
    pieces.build_vocabulary(TARGETS * 5, vocabulary_size=40)
    with pytest.raises(ValueError, match="replace_unk=True needs word tokenizers; the target "
                                         "tokenizer is WordPieceTokenizer"):
        Translator(model, source_tokenizer, pieces, replace_unk=True)
    plain = Translator(model, source_tokenizer, pieces)
    translation = Translation("a", -1.0, ["a"], ["ein", "</s>"], np.ones((2, 2), "float32"))
    with pytest.raises(ValueError, match="unk_replaced needs word tokenizers"):
        plain.unk_replaced(translation)


def test_translators_of_one_model_share_the_search_programs_of_the_same_options(
        translator_parts, monkeypatch):
    import keras_rnmt.translator as translator_module

    model, source_tokenizer, target_tokenizer = translator_parts
    original, compiled = translator_module.compile_search, []

    def counting(fn, jit_compile=False):
        compiled.append(fn)
        return original(fn, jit_compile)

    monkeypatch.setattr(translator_module, "compile_search", counting)
    options = dict(beam_size=3, length_penalty=0.7)
    first = Translator(model, source_tokenizer, target_tokenizer, **options).translate(SOURCES)
    traced = len(compiled)
    # Another batch size and UNK replacement search the same way: nothing is traced again.
    again = Translator(model, source_tokenizer, target_tokenizer, batch_size=32,
                       replace_unk=True, **options).translate(SOURCES)
    assert len(compiled) == traced
    assert [(r.ids, r.score) for r in again] == [(r.ids, r.score) for r in first]
    # Any option the search is traced with gets programs of its own.
    Translator(model, source_tokenizer, target_tokenizer, beam_size=3,
               length_penalty=0.8).translate(SOURCES)
    assert len(compiled) > traced


def test_search_constants_are_reused_until_the_weights_change():
    # A model of its own: the test changes its weights.
    model, source_tokenizer, target_tokenizer = tiny_parts(seed=3)
    translator = Translator(model, source_tokenizer, target_tokenizer, beam_size=2)
    before = translator.translate(SOURCES)
    constants = translator._search_constants(model)
    assert sorted(constants) == ["input_kernel", "input_table"]
    assert translator._search_constants(model) is constants  # same weights: not computed again
    embeddings = model.decoder.embedding.embeddings
    embeddings.assign(ops.convert_to_numpy(embeddings)[::-1].copy())  # as training would
    after = translator.translate(SOURCES)
    assert translator._search_constants(model) is not constants
    fresh = Translator(model, source_tokenizer, target_tokenizer, beam_size=2).translate(SOURCES)
    assert [(r.ids, r.score) for r in after] == [(r.ids, r.score) for r in fresh]
    assert [r.score for r in after] != [r.score for r in before]


def test_the_translator_s_search_with_constants_gives_the_plain_step_s_hypotheses(
        translator_parts):
    model, source_tokenizer, target_tokenizer = translator_parts
    source = np.zeros((4, 8), "int32")
    for row, sentence in enumerate(SOURCES):
        ids = source_tokenizer.tokenize([sentence]).to_list()[0] + [3]
        source[row, :len(ids)] = ids
    plain = beam_search(model.search_step, model.search_state(source), beam_size=3,
                        length_penalty=1.0,
                        batch_size=4, bos_id=2, eos_id=3, max_length=np.full(4, 12, "int32"),
                        source_mask=ops.not_equal(source, 0))
    results = Translator(model, source_tokenizer, target_tokenizer, beam_size=3,
                         max_length_a=0.0, max_length_b=12).translate(SOURCES)
    for row, result in enumerate(results):
        tokens = ops.convert_to_numpy(plain.tokens)[row, 0]
        assert result.ids == [int(t) for t in tokens[:len(result.ids)]]
        np.testing.assert_allclose(result.score, ops.convert_to_numpy(plain.scores)[row, 0],
                                   rtol=1e-5)
