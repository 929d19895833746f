"""Running a benchmark script from a test: as a process (`run_script`) or in-process
(`run_main`), and reading the figures it prints."""

import json
import os
import subprocess
import sys

from conftest import multi30k_dir

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCHMARKS = os.path.join(ROOT, "benchmarks")
sys.path.insert(0, BENCHMARKS)

# SB with every dimension shrunk: embeddings 8, encoder 2x8, decoder 16, 200-word vocabularies.
TINY = ["embedding_dim=8", "encoder_units=8", "decoder_units=16", "max_vocabulary=200"]
# Sentences of val and test2016 that the quality test's scripts decode.
SCORED = 100


def run_script(name, *args, backend="tensorflow", data=True):
    """Run `benchmarks/NAME` with `args`; returns its stdout (fails with its log).

    `data=True` (scripts that read Multi30k; their tests are marked `multi30k`) points
    KERAS_RNMT_DATA at it; the others run without it.
    """
    env = dict(os.environ, KERAS_BACKEND=backend, TF_CPP_MIN_LOG_LEVEL="2")
    if data:
        env["KERAS_RNMT_DATA"] = os.path.dirname(multi30k_dir())
    process = subprocess.run([sys.executable, os.path.join(BENCHMARKS, name), *args],
                             env=env, capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert process.returncode == 0, (process.stdout[-3000:] + process.stderr[-5000:])
    return process.stdout


def run_main(module, capsys, *args):
    """`module.main(args)` in this process (no interpreter start-up), for scripts that leave
    no global state behind (tables, statistics, decode_choices, quality's scoring, gpu_check's
    `prepare`, the drivers of train_throughput and matmul_precision, whose workers are
    processes of their own; decode_bound's wrapped searches are put back by its test's
    monkeypatch); returns what it printed."""
    capsys.readouterr()
    module.main([str(arg) for arg in args])
    return capsys.readouterr().out


def result_line(stdout):
    """The `RESULT {json}` line of a worker-style script."""
    lines = [line for line in stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, stdout[-3000:]
    return json.loads(lines[-1][len("RESULT "):])


def figures(stdout):
    """The `FIGURES {json}` line every measuring script ends with."""
    lines = [line for line in stdout.splitlines() if line.startswith("FIGURES ")]
    assert lines, stdout[-3000:]
    return json.loads(lines[-1][len("FIGURES "):])
