"""Test set-up shared by the whole suite.

The backend is chosen by ``KERAS_BACKEND`` (default ``tensorflow``) before Keras is imported;
``make test`` runs the suite once per backend. Tests marked ``tensorflow_only`` exercise
TensorFlow itself and are run in the tensorflow pass only (they are deselected, with a note,
under the other backends: deselection is reported, never hidden as a skip).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest  # noqa: E402

BACKEND = os.environ["KERAS_BACKEND"]


def pytest_report_header(config):
    return f"KERAS_BACKEND={BACKEND}"


def pytest_collection_modifyitems(config, items):
    if BACKEND == "tensorflow":
        return
    kept, dropped = [], []
    for item in items:
        (dropped if item.get_closest_marker("tensorflow_only") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from a clean global Keras state (policy, names, seeds)."""
    import keras

    keras.config.set_dtype_policy("float32")
    keras.utils.clear_session(free_memory=False)
    keras.utils.set_random_seed(0)
    yield
    keras.config.set_dtype_policy("float32")


def multi30k_dir():
    """Return the Multi30k folder from KERAS_RNMT_DATA.

    Under CI (``CI=true``) missing data is a failure, never a skip.
    """
    root = os.environ.get("KERAS_RNMT_DATA")
    path = os.path.join(root, "multi30k") if root else None
    if path and os.path.isdir(path):
        return path
    message = f"Multi30k not found (KERAS_RNMT_DATA={root!r}); set it to the folder holding multi30k/"
    if os.environ.get("CI") == "true":
        pytest.fail(message)
    pytest.skip(message)
