"""SavedModel export: a TensorFlow-only process gives exactly `Translator`'s translations."""

import json
import os
import subprocess
import sys

import keras
import pytest
from conftest import built_once
from run_helpers import serve_in_tensorflow_only_process

from keras_rnmt.data import build_tokenizer, make_dataset
from keras_rnmt.export import export_run, export_saved_model, step_buckets
from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.translator import Translator

pytestmark = pytest.mark.tensorflow_only

WORDS = "a dog cat bird runs sleeps sings on tree two dogs play the".split()
# A copy task: the trained model's outputs are non-trivial and differ per sentence.
SENTENCES = [" ".join(WORDS[(i * 5 + j * 3) % len(WORDS)] for j in range(2 + i % 4))
             for i in range(24)]
INPUTS = [SENTENCES[3], "", SENTENCES[1], " \u00a0 ", SENTENCES[0], "zebra dog"]
BIN = os.path.dirname(sys.executable)


def _train_copy_task(path):
    """Fit the copy task (100 steps) and save it as a run directory in `path`."""
    source = build_tokenizer("word", SENTENCES, min_frequency=1)
    target = build_tokenizer("word", SENTENCES, min_frequency=1)
    keras.utils.set_random_seed(0)
    model = build_model(ModelConfig(
        source_vocab_size=source.vocabulary_size(), target_vocab_size=target.vocabulary_size(),
        embedding_dim=16, encoder_units=16, decoder_units=32, attention="recurrent", window=1,
        memory_units=8, attention_units=16, dropout=0.0))
    model.compile(optimizer=keras.optimizers.Adam(0.02),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True,
                                                                  ignore_class=0),
                  jit_compile=False)
    data = make_dataset(SENTENCES, SENTENCES, source, target, batch_size=8, repeat=True)
    model.fit(data, steps_per_epoch=100, epochs=1, verbose=0, shuffle=False)
    model.save(str(path / "best.keras"))
    source.save(str(path / "source_tokenizer.json"))
    target.save(str(path / "target_tokenizer.json"))


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    """The copy task's run directory, fitted once per pass (`built_once`)."""
    return str(built_once(tmp_path_factory, "export_copy_task", _train_copy_task))


@pytest.fixture(scope="module")
def trained(run_dir):
    """(model, source tokenizer, target tokenizer) of `run_dir`."""
    translator = Translator.from_run(run_dir)
    return translator.model, translator.source_tokenizer, translator.target_tokenizer


@pytest.fixture(scope="module")
def float32_export(run_dir, tmp_path_factory):
    """(path, what a TensorFlow-only process serves from it for INPUTS): the run exported
    in float32 with beam 5, once per pass."""
    def export_and_serve(folder):
        export_run(run_dir, str(folder / "saved_model"), beam_size=5, length_penalty=1.0,
                   max_output_length=64)
        served = serve_in_tensorflow_only_process(str(folder / "saved_model"), INPUTS)
        (folder / "served.json").write_text(json.dumps(served))

    folder = built_once(tmp_path_factory, "export_float32", export_and_serve)
    return str(folder / "saved_model"), json.loads((folder / "served.json").read_text())


@pytest.mark.heavy
def test_exported_run_serves_translator_outputs_without_keras_rnmt(trained, float32_export):
    model, source, target = trained
    path, served = float32_export
    expected = Translator(model, source, target, beam_size=5).translate(INPUTS)
    assert served["translations"] == [result.text for result in expected]
    assert served["scores"] == pytest.approx([result.score for result in expected], abs=1e-4)
    assert served["translations"][0] == INPUTS[0]  # the copy task was learned
    assert served["translations"][1] == served["translations"][3] == ""
    assert served["scores"][1] == served["scores"][3] == 0.0

    shown = subprocess.run(
        [os.path.join(BIN, "saved_model_cli"), "show", "--dir", path, "--tag_set", "serve",
         "--signature_def", "serving_default"],
        capture_output=True, text=True, check=True).stdout
    inputs, outputs = shown.split("outputs", 1)
    assert "['inputs'] tensor_info" in inputs and "dtype: DT_STRING" in inputs
    assert "['translations'] tensor_info" in outputs and "['scores'] tensor_info" in outputs


@pytest.mark.heavy
def test_export_under_mixed_bfloat16_serves_translator_outputs_in_that_policy(
        run_dir, float32_export, tmp_path):
    float32 = float32_export[1]
    path = export_run(run_dir, str(tmp_path / "bf16"), dtype_policy="mixed_bfloat16",
                      beam_size=5, max_output_length=64)

    served = serve_in_tensorflow_only_process(path, INPUTS)
    translator = Translator.from_run(run_dir, dtype_policy="mixed_bfloat16", beam_size=5)
    expected = translator.translate(INPUTS)
    assert translator.model.dtype_policy.name == "mixed_bfloat16"
    assert served["translations"] == [result.text for result in expected]
    # The two run the same bfloat16 matmuls in differently fused graphs, so their roundings
    # differ: the copy task's logits reach 12, where bfloat16's spacing is 0.0625 (a logit
    # rounds by up to 0.03). Scores agree to a few hundredths, not to float32's 1e-4 (the
    # model trained with shuffled batches differs by 0.0066 on a score of -0.28).
    assert served["scores"] == pytest.approx([result.score for result in expected], abs=2e-2)
    # bfloat16 matmuls move the scores off the float32 ones (the weights are float32 in both).
    moved = [abs(a - b) for a, b in zip(served["scores"], float32["scores"], strict=True)]
    assert max(moved) > 1e-4
    assert keras.config.dtype_policy().name == "float32"  # the global policy is left alone


@pytest.mark.heavy
def test_export_with_beam_1_serves_translators_greedy_search(run_dir, trained, tmp_path):
    model, source, target = trained
    path = export_run(run_dir, str(tmp_path / "greedy"), beam_size=1, max_output_length=64)

    served = serve_in_tensorflow_only_process(path, INPUTS)
    expected = Translator(model, source, target, beam_size=1).translate(INPUTS)
    assert served["translations"] == [result.text for result in expected]
    # Greedy scores are plain log-probabilities, not length-normalised ones.
    assert served["scores"] == pytest.approx([result.score for result in expected], abs=1e-4)
    assert served["translations"][0] == INPUTS[0]


@pytest.mark.heavy
def test_exported_transformer_serves_translator_outputs(trained, tmp_path):
    _, source, target = trained
    keras.utils.set_random_seed(1)
    model = build_model(ModelConfig(
        source_vocab_size=source.vocabulary_size(), target_vocab_size=target.vocabulary_size(),
        model_type="transformer", embedding_dim=16, num_heads=2, intermediate_dim=32,
        transformer_layers=1, dropout=0.0))
    # Buckets of 16 and 32 steps; every limit ceil(1.5 |source| + 10) here is at most 21.
    export_saved_model(model, source, target, str(tmp_path / "transformer"), beam_size=3,
                       max_output_length=32)

    served = serve_in_tensorflow_only_process(str(tmp_path / "transformer"), INPUTS)
    expected = Translator(model, source, target, beam_size=3).translate(INPUTS)
    assert served["translations"] == [result.text for result in expected]
    assert served["scores"] == pytest.approx([result.score for result in expected], abs=1e-4)
    assert len({text for text in served["translations"] if text}) > 1  # not one constant output


def test_arguments_are_checked(trained, tmp_path):
    model, source, target = trained
    assert step_buckets(512) == (16, 64, 256, 512)
    assert step_buckets(16) == (16,)
    with pytest.raises(ValueError, match="beam_size must be a positive int"):
        export_saved_model(model, source, target, str(tmp_path), beam_size=0)
    with pytest.raises(ValueError, match="max_length_a and max_length_b must be >= 0"):
        export_saved_model(model, source, target, str(tmp_path), max_length_a=0,
                           max_length_b=0)
    with pytest.raises(ValueError, match=r"Unknown option\(s\) \['beam'\]"):
        export_run(str(tmp_path), str(tmp_path / "out"), beam=3)
    with pytest.raises(FileNotFoundError, match="No model at"):
        export_run(str(tmp_path), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()  # a bad run makes no SavedModel directory
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    with pytest.raises(NotADirectoryError, match="a_file is a file: a SavedModel is written"):
        export_saved_model(model, source, target, str(a_file))  # before any tracing


def test_keras_rnmt_export_reports_bad_input_in_one_line(run_dir, tmp_path, capsys):
    from keras_rnmt.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["export", run_dir, str(tmp_path / "saved"), "--beam-size", "0"])
    assert stop.value.code == 1
    assert capsys.readouterr().err == ("keras-rnmt export: error: beam_size must be a positive "
                                       "int; received beam_size=0\n")
