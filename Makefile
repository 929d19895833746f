# keras-rnmt: the two commands a newcomer needs.
#   make quickstart   install, then train/evaluate/export the toy recurrent-attention model
#   make test         install, then run the test suite under tensorflow, jax and torch
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BACKENDS ?= tensorflow jax torch
# Two pytest-xdist workers: the suite is mostly small models, bound by Python overhead, so
# two processes use a 2-core machine better than one (the TensorFlow pass: 585 s with one,
# 262 s with two, both measured beside a training run; three were slower again: the PyTorch
# pass 260 s against 226 s with two, the TensorFlow pass 851 s against 765-790 s, its
# processes then using 1.92 of the 2 cores). PYTEST_WORKERS=0 runs in-process.
# `--dist worksteal`: a worker that runs out of tests takes half of the other's queue, and
# the tests marked `heavy` are collected first (tests/conftest.py), so both workers end
# together: the TensorFlow pass took 787 s instead of 849 s (2-core AMD EPYC; with the
# default `load` and the same ordering, 827 s).
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=

.PHONY: install quickstart test lint clean

# pip would compile every installed module to bytecode, 58 s of the install's 117 s (2-core
# AMD EPYC; 68-70 s without, in fresh clones); instead Python writes the bytecode of what is
# imported, on first use. Where the environment sets PYTHONDONTWRITEBYTECODE (this machine
# does), nothing would be written and every process would compile its imports again (the
# stack: 24.9 s against 9.6 s), so make's recipes clear it.
export PYTHONDONTWRITEBYTECODE :=

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile -e ".[jax,torch,dev]"
	touch $@

# JAX trains the toy model fastest on CPU; the export step runs under TensorFlow by itself.
QUICKSTART_BACKEND ?= jax

quickstart: install
	KERAS_BACKEND=$(QUICKSTART_BACKEND) $(VENV)/bin/keras-rnmt quickstart

# Every backend-agnostic test runs once per backend; tests marked tensorflow_only
# (tf.data internals, SavedModel) run in the tensorflow pass only.
# JAX keeps its compiled programs in one cache folder for the whole run, so the many tests
# that build the same tiny models (and the benchmark scripts' JAX workers) compile each
# program once: tests/attention + tests/models under JAX took 288 s against 345 s without it
# (2 cores). The folder is removed at the end.
JAX_CACHE_ENV = JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0 JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0
# XLA (JAX, and TensorFlow's jit_compile tests) skips LLVM's optimisation of the programs it
# compiles: the suite's tiny programs compile in about half the time and run a few times
# slower, and compiling is what the suite spends its time on (the JAX pass: 662 -> 539 s,
# 2-core AMD EPYC). The same HLO runs, without fast-math either way. Only the suite's
# processes get the flag: training and benchmark runs keep XLA's default level.
# Two other switches measured for the TensorFlow pass gave nothing (765-790 s without them):
# oneDNN off (TF_ENABLE_ONEDNN_OPTS=0) 809 s, Grappler's graph optimisations off 824 s.
# tests/xla_test_flags.py adds the flags that the installed XLAs accept and that cut the
# suite's compilation further (XLA's older elementwise emitters: the JAX pass 792 -> 525 s,
# 2-core AVX2 AMD EPYC, 2026-12-07).
XLA_TEST_FLAGS = --xla_backend_optimization_level=0

test: install
	@set -e; cache=$$(mktemp -d); trap 'rm -rf "$$cache"' EXIT; \
	xla_flags="$(XLA_TEST_FLAGS) $$($(PY) tests/xla_test_flags.py)"; \
	echo "XLA_FLAGS for the suite: $$xla_flags"; \
	for b in $(BACKENDS); do \
		echo "=== KERAS_BACKEND=$$b ==="; \
		JAX_COMPILATION_CACHE_DIR=$$cache $(JAX_CACHE_ENV) KERAS_BACKEND=$$b \
			XLA_FLAGS="$$xla_flags $${XLA_FLAGS:-}" \
			$(PY) -m pytest -q -n $(PYTEST_WORKERS) --dist worksteal --durations=10 $(PYTEST_ARGS); \
	done

lint: install
	$(VENV)/bin/ruff check keras_rnmt tests recipes benchmarks

clean:
	rm -rf $(VENV) runs .pytest_cache
