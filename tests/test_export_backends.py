"""Export from a JAX or PyTorch session: `export_run` reloads the run under TensorFlow.

`tests/test_export.py` runs in the tensorflow pass, where `export_run` traces the model in
process. A run trained under JAX or PyTorch is exported the documented way too: from the
same call, `export_run` starts `python -m keras_rnmt.export` under TensorFlow. These tests
check that path end to end against the session's own `Translator` (in the torch pass: the
process started is the same from a JAX session), and that the in-process
`export_saved_model` refuses another backend with the way out in its message.
"""

import os

import pytest
from run_helpers import SOURCES, serve_in_tensorflow_only_process

from keras_rnmt.export import export_run, export_saved_model
from keras_rnmt.translator import Translator

pytestmark = pytest.mark.backends("jax", "torch")



# In the torch pass: `export_run` starts the same TensorFlow process from a JAX session, and
# JAX's searches equal PyTorch's and TensorFlow's (test_cross_backend.py); under JAX this
# test took 55-80 s, most of it the two TensorFlow processes.
@pytest.mark.heavy
@pytest.mark.backends("torch")
def test_export_run_under_this_backend_serves_this_backends_translations(trained_run,
                                                                         tmp_path):
    inputs = [SOURCES[0], "", SOURCES[1], SOURCES[2]]
    # Two step buckets (16, 64) to trace in the export process instead of four (up to 512).
    path = export_run(str(trained_run), str(tmp_path / "saved"), beam_size=3,
                      length_penalty=1.0, max_output_length=64)
    assert os.path.exists(os.path.join(path, "saved_model.pb"))
    served = serve_in_tensorflow_only_process(path, inputs)

    expected = Translator.from_run(str(trained_run), beam_size=3,
                                   length_penalty=1.0).translate(inputs)
    assert served["translations"] == [result.text for result in expected]
    assert served["translations"][1] == "" and served["translations"][0]
    assert served["scores"] == pytest.approx([result.score for result in expected], abs=1e-4)


def test_export_saved_model_in_process_names_the_backend_and_the_way_out(tmp_path):
    with pytest.raises(RuntimeError, match=r"needs KERAS_BACKEND=tensorflow.*export_run"):
        export_saved_model(None, None, None, str(tmp_path / "saved"))


# The export process runs under TensorFlow whichever backend started it (12 s a pass, most of
# it that process's start).
@pytest.mark.backends("torch")
def test_bad_input_in_the_export_process_is_one_line_in_this_one(trained_run, tmp_path, capsys):
    # `keras-rnmt export` -> export_run -> the TensorFlow process, which finds the bad value:
    # its ValueError comes back as this process's one line, word for word.
    from keras_rnmt.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["export", str(trained_run), str(tmp_path / "new" / "saved"), "--beam-size", "0"])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert err.endswith("keras-rnmt export: error: beam_size must be a positive int; "
                        "received beam_size=0\n"), err
    assert "Traceback" not in err
    assert not (tmp_path / "new").exists()  # checked before anything is created


# Checked in this process, before the TensorFlow process starts: the same under every backend.
@pytest.mark.backends("torch")
def test_a_path_that_cannot_be_a_directory_is_one_line_before_any_export(trained_run, tmp_path,
                                                                         capsys, monkeypatch):
    from keras_rnmt import export
    from keras_rnmt.cli import main

    monkeypatch.setattr(export, "_run_export_process", None)  # never reached
    a_file = tmp_path / "saved"
    a_file.write_text("not a directory")
    for path, message in ((a_file, f"{a_file} is a file: a SavedModel is written to a directory"),
                          (a_file / "inside", f"{a_file / 'inside'}: {a_file} is a file, "
                                              "not a directory")):
        with pytest.raises(SystemExit) as stop:
            main(["export", str(trained_run), str(path)])
        assert stop.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith("keras-rnmt export: error: ") and message in err, err
        assert "Traceback" not in err
    assert a_file.read_text() == "not a directory"
