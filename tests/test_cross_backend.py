"""The same weights give the same translations under TensorFlow, JAX and PyTorch.

Saved `.keras` models are searched (greedy and beam 4) under TensorFlow in this process and
in one subprocess per other backend (`cross_backend_worker.py`); tokens must be identical and
scores equal to 1e-4. The test starts its own backends, so it runs once, in the tensorflow
pass.
"""

import json
import os
import subprocess
import sys

import cross_backend_worker
import numpy as np
import pytest
from run_helpers import tiny_parts

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cross_backend_worker.py")
BACKENDS = ("tensorflow", "jax", "torch")


@pytest.mark.heavy
@pytest.mark.tensorflow_only
def test_search_gives_the_same_translations_under_every_backend(trained_run, tmp_path):
    other = tiny_parts(attention="general", cell="gru", input_feeding="context")[0]
    other.save(str(tmp_path / "general_gru.keras"))
    request = {
        "models": {"recurrent_trained": str(trained_run / "best.keras"),
                   "general_gru": str(tmp_path / "general_gru.keras")},
        # "a dog runs .", "the cat sleeps", an unseen mix, one word; padded with 0.
        "source": [[5, 8, 12, 4, 3, 0, 0, 0], [15, 7, 14, 3, 0, 0, 0, 0],
                   [17, 6, 13, 10, 15, 16, 4, 3], [9, 3, 0, 0, 0, 0, 0, 0]],
        "max_length": 9,
    }
    (tmp_path / "request.json").write_text(json.dumps(request))
    # TensorFlow's searches in this process (a TensorFlow process took 10-16 s to start).
    reports = {"tensorflow": cross_backend_worker.searches(request)}
    for backend in BACKENDS[1:]:
        env = {**os.environ, "KERAS_BACKEND": backend}
        done = subprocess.run([sys.executable, WORKER, str(tmp_path / "request.json")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"{backend}: {done.stderr[-3000:]}"
        reports[backend] = json.loads(done.stdout.strip().splitlines()[-1])
    for backend in BACKENDS:
        assert reports[backend]["backend"] == backend

    reference = reports["tensorflow"]
    for name in request["models"]:
        for mode in ("greedy", "beam"):
            tokens = np.array(reference[name][mode]["tokens"])
            rows = tokens.reshape(-1, tokens.shape[-1])
            assert len({tuple(row) for row in rows}) > 1  # not one degenerate output
            for backend in BACKENDS[1:]:
                got = reports[backend][name][mode]
                np.testing.assert_array_equal(got["tokens"], tokens,
                                              err_msg=f"{name} {mode} {backend}")
                for key in ("scores", "log_probs"):
                    np.testing.assert_allclose(got[key], reference[name][mode][key],
                                               atol=1e-4, err_msg=f"{name} {mode} {backend}")
