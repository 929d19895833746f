"""`use_compilation_cache`: under JAX, keep compiled programs on disk, so that a later run of
the same model and shapes loads them instead of compiling them again.

Under JAX every batch shape of a training run, and every batch and chunk shape of a beam
search, is a program that XLA compiles. On the 2-core AVX2 host the first beam-5 pass over
test2016 took 90-98 s with an empty cache. With the programs of an earlier run on disk it
took 31 s, of which 15 s were the search itself (benchmarks/RESULTS.md §2, "JAX's persistent
compilation cache").

`keras-rnmt` (`keras_rnmt.cli.main`) turns the cache on under JAX. The directory:
- ``$KERAS_RNMT_COMPILATION_CACHE`` where that names a directory;
- none where it is ``off``;
- otherwise ``$XDG_CACHE_HOME/keras-rnmt/jax`` (``~/.cache/keras-rnmt/jax``).

The settings:
- Every program is kept, however short its compilation. JAX's default keeps only those over
  1 s, and the search's small programs then cost 9 s of that pass again.
- The cache holds up to `MAX_BYTES`, least recently used out first (JAX's LRU cache, whose
  file lock needs the ``filelock`` package; without it the cache stays off, because several
  processes writing to one unlocked cache could read each other's partial files).
- A cache the user set for JAX (``JAX_COMPILATION_CACHE_DIR``, ``jax.config``) is used as it
  is.
- A directory that cannot be created or written (a read-only home, a path through a file)
  leaves the cache off with a warning that names it: the cache saves time, and its absence
  must not stop a command.

JAX's cache key covers the program, its compile options and XLA flags, the jax and jaxlib
versions and the device, so a changed model or install compiles anew. The cache is trusted:
JAX loads and runs what it finds there (its documentation's warning), so the directory is
created private to its user (mode 0700).
"""

import importlib.util
import os
import warnings

ENV = "KERAS_RNMT_COMPILATION_CACHE"
MAX_BYTES = 2**30


def default_cache_dir(environ=None):
    """``$XDG_CACHE_HOME/keras-rnmt/jax``, or ``~/.cache/keras-rnmt/jax``.

    Example:
    >>> default_cache_dir({"XDG_CACHE_HOME": "/c"})
    '/c/keras-rnmt/jax'
    """
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "keras-rnmt", "jax")


def use_compilation_cache(environ=None):
    """Turn JAX's persistent compilation cache on (module docstring). Call it before the first
    compilation: JAX opens its cache then.

    Args:
        environ: the environment to read `ENV` and ``XDG_CACHE_HOME`` from (default:
            ``os.environ``).

    Returns:
        str or None. The cache directory in use, or None where there is none: a backend
        other than JAX, `ENV` set to ``off``, no ``filelock`` package, or a directory that
        cannot be created or written (with a `RuntimeWarning`).
    """
    import keras

    if keras.backend.backend() != "jax":
        return None
    environ = os.environ if environ is None else environ
    setting = environ.get(ENV, "").strip()
    if setting.lower() == "off":
        return None
    import jax

    if jax.config.jax_compilation_cache_dir:  # the user's own, for JAX itself
        return jax.config.jax_compilation_cache_dir
    if importlib.util.find_spec("filelock") is None:
        return None
    path = os.path.abspath(os.path.expanduser(setting or default_cache_dir(environ)))
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        problem = None if os.access(path, os.W_OK | os.X_OK) else "not writable"
    except OSError as error:
        problem = error.strerror or type(error).__name__
    if problem:
        warnings.warn(f"the compilation cache is off: cannot use {path} ({problem}). Set {ENV} "
                      f"to a writable directory, or to 'off'.", RuntimeWarning, stacklevel=2)
        return None
    try:  # a JAX without the LRU cache's size limit keeps no cache here
        jax.config.update("jax_compilation_cache_max_size", MAX_BYTES)
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    except AttributeError:
        return None
    jax.config.update("jax_compilation_cache_dir", path)
    return path
