"""Export from a JAX or PyTorch session: `export_run` reloads the run under TensorFlow.

`tests/test_export.py` runs in the tensorflow pass, where `export_run` traces the model in
process. A run trained under JAX or PyTorch is exported the documented way too: from the
same call, `export_run` starts `python -m keras_rnmt.export` under TensorFlow. These tests
check that path end to end against the session's own `Translator`, and that the in-process
`export_saved_model` refuses another backend with the way out in its message.
"""

import json
import os
import subprocess
import sys

import pytest
from run_helpers import SOURCES

from keras_rnmt.export import export_run, export_saved_model
from keras_rnmt.translator import Translator

pytestmark = pytest.mark.backends("jax", "torch")

# Runs in a fresh interpreter: TensorFlow only, no keras-rnmt.
SERVE = """
import json, sys
import tensorflow as tf
serve = tf.saved_model.load(sys.argv[1]).signatures["serving_default"]
out = serve(inputs=tf.constant(json.loads(sys.argv[2]), tf.string))
assert "keras_rnmt" not in sys.modules, sorted(sys.modules)
print(json.dumps({"translations": [t.decode() for t in out["translations"].numpy()],
                  "scores": out["scores"].numpy().tolist()}))
"""


def test_export_run_under_this_backend_serves_this_backends_translations(trained_run,
                                                                         tmp_path):
    inputs = [SOURCES[0], "", SOURCES[1], SOURCES[2]]
    path = export_run(str(trained_run), str(tmp_path / "saved"), beam_size=3,
                      length_penalty=1.0)
    assert os.path.exists(os.path.join(path, "saved_model.pb"))
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "KERAS_BACKEND": "tensorflow"}
    output = subprocess.run([sys.executable, "-c", SERVE, path, json.dumps(inputs)],
                            capture_output=True, text=True, env=env, check=True).stdout
    served = json.loads(output.strip().splitlines()[-1])

    expected = Translator.from_run(str(trained_run), beam_size=3,
                                   length_penalty=1.0).translate(inputs)
    assert served["translations"] == [result.text for result in expected]
    assert served["translations"][1] == "" and served["translations"][0]
    assert served["scores"] == pytest.approx([result.score for result in expected], abs=1e-4)


def test_export_saved_model_in_process_names_the_backend_and_the_way_out(tmp_path):
    with pytest.raises(RuntimeError, match=r"needs KERAS_BACKEND=tensorflow.*export_run"):
        export_saved_model(None, None, None, str(tmp_path / "saved"))


def test_bad_input_in_the_export_process_is_one_line_in_this_one(trained_run, tmp_path, capsys):
    with pytest.raises(ValueError, match=r"^beam_size must be a positive int; received "
                                         r"beam_size=0$"):
        export_run(str(trained_run), str(tmp_path / "saved"), beam_size=0)
    from keras_rnmt.cli import main

    with pytest.raises(SystemExit) as stop:
        main(["export", str(trained_run), str(tmp_path / "saved"), "--beam-size", "0"])
    assert stop.value.code == 1
    err = capsys.readouterr().err
    assert "keras-rnmt export: error: beam_size must be a positive int" in err
    assert "Traceback" not in err
