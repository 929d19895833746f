"""`use_compilation_cache`: under JAX, `keras-rnmt` keeps compiled programs on disk, and a
second process loads them instead of compiling; ``off``, a cache the user set for JAX and the
other backends are respected."""

import json
import os
import stat
import subprocess
import sys

import keras
import pytest

from keras_rnmt.compilation_cache import ENV, MAX_BYTES, default_cache_dir, use_compilation_cache

# A child process (JAX's cache is per-process state, opened at the first compilation): in
# mode "use" it turns the cache on as the CLI does, counts JAX's cache hits and compiles one
# program; in mode "respect" it checks `off`, no filelock package, then a cache dir the user
# set for JAX; in mode "unwritable" it asks for directories it cannot make or write.
CHILD = """
import json, os, sys
os.environ["KERAS_BACKEND"] = "jax"
import jax, jax.numpy as jnp
from keras_rnmt.compilation_cache import ENV, use_compilation_cache
report = {}
if sys.argv[1] == "use":
    hits = []
    jax.monitoring.register_event_listener(
        lambda event, **kw: hits.append(event) if event.endswith("cache_hits") else None)
    report["path"] = use_compilation_cache()
    report["min_compile_secs"] = jax.config.jax_persistent_cache_min_compile_time_secs
    report["max_size"] = jax.config.jax_compilation_cache_max_size
    report["value"] = float(jax.jit(lambda x: jnp.tanh(x) @ x.T)(jnp.ones((3, 3))).sum())
    report["hits"] = len(hits)
elif sys.argv[1] == "unwritable":
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        report["named"] = use_compilation_cache({ENV: sys.argv[2]})
        report["default"] = use_compilation_cache({"XDG_CACHE_HOME": sys.argv[3]})
        real_access = os.access  # a directory there, but read-only (root passes chmod)
        os.access = lambda path, mode: False
        report["read_only"] = use_compilation_cache({ENV: sys.argv[4]})
        os.access = real_access
    report["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    report["dir"] = jax.config.jax_compilation_cache_dir
    report["min_compile_secs"] = jax.config.jax_persistent_cache_min_compile_time_secs
    report["value"] = float(jax.jit(lambda x: jnp.tanh(x) @ x.T)(jnp.ones((3, 3))).sum())
else:
    report["off"] = use_compilation_cache({ENV: "off"})
    report["off_dir"] = jax.config.jax_compilation_cache_dir
    # Without filelock, JAX's cache could not lock its files against other processes.
    import importlib.util
    real = importlib.util.find_spec
    importlib.util.find_spec = lambda name, *a: None if name == "filelock" else real(name, *a)
    report["no_filelock"] = use_compilation_cache({ENV: sys.argv[3]})
    importlib.util.find_spec = real
    jax.config.update("jax_compilation_cache_dir", sys.argv[2])
    report["user"] = use_compilation_cache({ENV: sys.argv[3]})
    report["min_compile_secs"] = jax.config.jax_persistent_cache_min_compile_time_secs
print("REPORT " + json.dumps(report))
"""


def child(*args, **env):
    # Without the cache settings of `make test` (JAX_COMPILATION_CACHE_DIR and the
    # JAX_PERSISTENT_CACHE_* thresholds), which JAX would read as the user's.
    environ = {k: v for k, v in os.environ.items()
               if k != ENV and not k.startswith(("JAX_COMPILATION_CACHE", "JAX_PERSISTENT_CACHE"))}
    environ |= env
    result = subprocess.run([sys.executable, "-c", CHILD, *args], capture_output=True,
                            text=True, env=environ)
    assert result.returncode == 0, result.stderr[-3000:]
    line = [x for x in result.stdout.splitlines() if x.startswith("REPORT ")][-1]
    return json.loads(line[len("REPORT "):])


def test_default_dir_follows_xdg_cache_home():
    assert default_cache_dir({"XDG_CACHE_HOME": "/c"}) == "/c/keras-rnmt/jax"
    assert default_cache_dir({}) == os.path.join(os.path.expanduser("~"), ".cache",
                                                 "keras-rnmt", "jax")


@pytest.mark.heavy
@pytest.mark.backends("jax")
def test_a_second_process_loads_the_programs_the_first_compiled(tmp_path):
    cache = tmp_path / "cache" / "jax"
    first = child("use", **{ENV: str(cache)})
    assert first["path"] == str(cache) and first["hits"] == 0
    # Every program kept, however fast it compiled, in a bounded (locked) cache.
    assert first["min_compile_secs"] == 0 and first["max_size"] == MAX_BYTES
    entries = sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache"))
    assert entries, "nothing was written to the cache"
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700  # JAX runs what it finds there
    second = child("use", **{ENV: str(cache)})
    assert second["hits"] >= 1 and second["value"] == first["value"]
    assert sorted(p.name for p in cache.iterdir() if p.name.endswith("-cache")) == entries


@pytest.mark.backends("jax")
def test_off_no_filelock_and_a_cache_the_user_set_for_jax_are_respected(tmp_path):
    report = child("respect", str(tmp_path / "users"), str(tmp_path / "ours"))
    assert report["off"] is None and report["off_dir"] is None
    assert report["no_filelock"] is None
    assert report["user"] == str(tmp_path / "users")
    assert report["min_compile_secs"] == 1.0  # JAX's own setting, untouched
    assert not (tmp_path / "ours").exists()


@pytest.mark.backends("jax")
def test_a_directory_that_cannot_be_made_leaves_the_cache_off_with_a_warning(tmp_path):
    # A read-only home or a path through a file must not stop the command: the cache saves
    # time, nothing more.
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    named, xdg, read_only = blocker / "cache", str(blocker), tmp_path / "read-only"
    report = child("unwritable", str(named), xdg, str(read_only))
    assert report["named"] is None and report["default"] is None
    assert report["read_only"] is None
    assert report["warnings"] == [
        f"RuntimeWarning: the compilation cache is off: cannot use {path} ({why}). "
        f"Set {ENV} to a writable directory, or to 'off'."
        for path, why in [(named, "Not a directory"),
                          (blocker / "keras-rnmt" / "jax", "Not a directory"),
                          (read_only, "not writable")]]
    # JAX's own settings untouched, and programs still compile and run.
    assert report["dir"] is None and report["min_compile_secs"] == 1.0
    assert report["value"] == pytest.approx(3 * 3 * 3 * 0.7615942, rel=1e-6)


@pytest.mark.backends("tensorflow", "torch")
def test_other_backends_keep_no_cache(tmp_path):
    assert keras.backend.backend() in ("tensorflow", "torch")
    assert use_compilation_cache({ENV: str(tmp_path / "c")}) is None
    assert not (tmp_path / "c").exists()
