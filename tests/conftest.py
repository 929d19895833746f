"""Test set-up shared by the whole suite.

The backend is chosen by ``KERAS_BACKEND`` (default ``tensorflow``) before Keras is imported;
``make test`` runs the suite once per backend. Tests marked ``tensorflow_only`` exercise
TensorFlow itself and are run in the tensorflow pass only; tests marked ``backends("jax")``
run in the named backends' passes only (they are deselected, with a note, under the other
backends: deselection is reported, never hidden as a skip).

Layers, models, search and training steps are tested under every backend. A check that is
the same under every backend (pure tf.data, the training driver's bookkeeping, a TensorFlow
process started from any backend) runs in one pass, usually the torch pass, where the tiny
models run without compiling; its marker says why. `bash .ci/run` must stay under 30 min on
a slow 2-core host (1,888 s on 2026-12-06 before those checks moved).
"""

import os

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# On a GPU, JAX takes 75% of the device's memory in the
# first process that touches it, so pytest-xdist workers beside it have none left: each
# worker allocates what it uses instead. No effect on a CPU.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
# Tests that run `keras-rnmt` in-process would otherwise turn on JAX's persistent compilation
# cache in the user's ~/.cache (keras_rnmt/compilation_cache.py); `make test` gives the run a
# cache folder of its own instead (JAX_COMPILATION_CACHE_DIR, used by both).
os.environ.setdefault("KERAS_RNMT_COMPILATION_CACHE", "off")

import pytest  # noqa: E402

BACKEND = os.environ["KERAS_BACKEND"]

# pytest-xdist workers share the cores: PyTorch's OpenMP pool (one thread per core in every
# worker) then oversubscribes them and spins, so each worker gets its share of the cores.
_WORKERS = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
if BACKEND == "torch" and _WORKERS > 1:
    import torch

    torch.set_num_threads(max(1, (os.cpu_count() or 1) // _WORKERS))
# The same for TensorFlow's two pools (threads within an op, ops side by side), which it sizes
# when its runtime starts; tf.data runs in every pass, and the tests' subprocesses inherit
# them. With 2 workers on 2 cores: tests/models, tests/search, tests/training and
# tests/test_translator.py under TensorFlow took 370 s against 400 s with a pool per core;
# the whole TensorFlow pass of `bash .ci/run`, 810 s against 831 s an hour before (one run
# each, inside the host's variation).
if _WORKERS > 1:
    _THREADS = str(max(1, (os.cpu_count() or 1) // _WORKERS))
    os.environ.setdefault("TF_NUM_INTRAOP_THREADS", _THREADS)
    os.environ.setdefault("TF_NUM_INTEROP_THREADS", _THREADS)
    # And for the OpenMP pool of every PyTorch process a test starts (a benchmark script's
    # worker, a CLI run): with a thread per core, its threads spin while the other worker
    # holds a core. gpu_check.py's PyTorch worker beside a busy core: 40 s and 44 CPU-s
    # with two threads, 25 s and 23 CPU-s with one.
    os.environ.setdefault("OMP_NUM_THREADS", _THREADS)

# On a GPU, JAX multiplies float32 matrices in TF32 (10-bit mantissas) by default, so two
# arrangements of one computation (a batch searched whole or shrunk, our beam search and
# keras-hub's) differ by 1e-3; the tests check the algorithms, so they ask for full float32.
# PyTorch's default for float32 matmuls is already full precision; CPUs always are.
if BACKEND == "jax":
    import jax

    if jax.default_backend() != "cpu":
        jax.config.update("jax_default_matmul_precision", "highest")


def pytest_report_header(config):
    # Under pytest-xdist (`make test` runs 2 workers) the workers deselect, and the summary
    # line does not count them: the header states the rule instead.
    rule = ("tests marked backends(...) without tensorflow" if BACKEND == "tensorflow"
            else "tests marked tensorflow_only or backends(...) without " + BACKEND)
    return f"KERAS_BACKEND={BACKEND}; deselected in this pass: {rule}"


def _runs_here(item):
    if item.get_closest_marker("tensorflow_only"):
        return BACKEND == "tensorflow"
    marker = item.get_closest_marker("backends")
    return marker is None or BACKEND in marker.args


def pytest_collection_modifyitems(config, items):
    kept, dropped = [], []
    for item in items:
        (kept if _runs_here(item) else dropped).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
    # Tests marked `heavy` (20 s or more on a 2-core CPU) go first, the rest keep their order:
    # the xdist workers start on the long ones, and with `--dist worksteal` (`make test`) a
    # worker that runs out takes half of the other's queue, so only short tests are left to
    # share at the end instead of one worker idling through a long test collected late.
    # Every test still runs.
    items[:] = sorted(kept, key=lambda item: item.get_closest_marker("heavy") is None)


@pytest.fixture(autouse=True)
def _fresh_keras_state():
    """Each test starts from a clean global Keras state (policy, names, seeds) and float32
    matmuls."""
    import keras

    from keras_rnmt.matmul_precision import set_matmul_precision

    keras.config.set_dtype_policy("float32")
    set_matmul_precision("float32")
    keras.utils.clear_session(free_memory=False)
    keras.utils.set_random_seed(0)
    yield
    keras.config.set_dtype_policy("float32")
    set_matmul_precision("float32")


def built_once(tmp_path_factory, name, build):
    """The folder `name`, filled by `build(path)` once per pass and shared read-only.

    Under pytest-xdist the workers share it, beside their own temporary folders: the first
    to arrive builds it under a file lock while the others wait. For deterministic builds
    only (a seeded fit, an export), which every worker would make the same.
    """
    import fcntl
    import shutil

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # the folder all workers' temporary folders are in
    path = root / name
    with open(root / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (root / f"{name}.built").exists():
            path.mkdir()
            try:
                build(path)
            except BaseException:
                shutil.rmtree(path)  # the next worker tries again and meets the same error
                raise
            (root / f"{name}.built").touch()
    return path


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """A tiny recurrent-attention run directory fitted for 2 epochs: `best.keras`, tokenizers,
    `log.csv` (with val_bleu) and `heatmaps/` (see `run_helpers.train_run`). Read-only,
    fitted once per pass (`built_once`)."""
    from run_helpers import train_run

    return built_once(tmp_path_factory, "trained_run", lambda path: train_run(str(path)))


@pytest.fixture
def small_splits(monkeypatch):
    """The training tests' splits with validation and test cut to 32 sentences (one batch)
    to keep decoding cheap. Here, not in `tests/training/conftest.py`: a second module named
    `conftest` shadowed this one for `from conftest import ...` when `tests/training` was
    collected first."""
    from keras_rnmt.training import train

    load_splits = train.load_splits
    monkeypatch.setattr(train, "load_splits", lambda config: {
        name: (sources[:32], targets[:32]) if name != "train" else (sources, targets)
        for name, (sources, targets) in load_splits(config).items()})


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
