"""The peer, JoeyNMT 2.3.0, on SB: its own virtual environment, data folder, config and logs.

    from joeynmt_peer import train_one_epoch
    run = train_one_epoch()      # trains (or reuses) benchmarks/work/joeynmt, parses its log
    run["train_windows"]         # [(step, target tokens/s), ...] as JoeyNMT logs them
    run["test_decode_seconds"]   # its closing beam-5 decode of test2016
    decode_test()["test_decode_seconds"]   # that checkpoint decoding test2016 again, now

The config is `../shared/peer/joeynmt_sb.yaml` as given (460 updates of 64 sentences,
about one epoch; beam 5, batch 64 at test time); only DATA_DIR and MODEL_DIR are filled in,
and on a GPU (`cuda=True`, `gpu_joeynmt.py`) its `use_cuda` and `fp16` switches.
JoeyNMT ends training by decoding the validation and test sets with the best checkpoint,
so one run yields both the training throughput and the decoding throughput after one epoch.
"""

import os
import re
import shutil
import subprocess
import sys
import time

from sb import ROOT, data_dir

VENV = os.path.join(ROOT, "benchmarks", ".joeynmt-venv")
WORK = os.path.join(ROOT, "benchmarks", "work", "joeynmt")
PYTHON = os.path.join(VENV, "bin", "python")
PACKAGES = ["torch==2.13.0", "joeynmt==2.3.0", "importlib_metadata"]
SPLITS = {"train": "train", "val": "val", "test_2016_flickr": "test_2016_flickr"}


def peer_config_path():
    base = os.environ.get("KERAS_RNMT_DATA") or os.path.join(ROOT, "..", "shared", "data")
    path = os.path.join(os.path.dirname(os.path.abspath(base)), "peer", "joeynmt_sb.yaml")
    if not os.path.exists(path):
        raise SystemExit(f"JoeyNMT SB config not found at {path}")
    return path


def ensure_venv():
    """Create benchmarks/.joeynmt-venv with JoeyNMT 2.3.0 (CPU torch) unless it works."""
    if os.path.exists(PYTHON):
        check = subprocess.run([PYTHON, "-c", "import joeynmt, torch"], capture_output=True)
        if check.returncode == 0:
            return PYTHON
    print(f"installing JoeyNMT into {VENV} ...", flush=True)
    subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    subprocess.run([PYTHON, "-m", "pip", "install", "-q", *PACKAGES], check=True)
    return PYTHON


def prepare(work=WORK, cuda=False, fp16=False):
    """Copy the lc.norm.tok files under JoeyNMT's names and write the filled-in config
    (on CUDA with `cuda`; float16 autocast and loss scaling with `fp16`)."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    source = data_dir()
    for split, name in SPLITS.items():
        for lang in ("en", "de"):
            shutil.copyfile(os.path.join(source, f"{split}.lc.norm.tok.{lang}"),
                            os.path.join(data, f"{name}.{lang}"))
    with open(peer_config_path()) as f:
        text = f.read()
    text = text.replace("DATA_DIR", data).replace("MODEL_DIR", os.path.join(work, "model"))
    for switch, value in (("use_cuda", cuda), ("fp16", fp16)):
        if f"{switch}: False" not in text:
            raise SystemExit(f"{peer_config_path()} has no '{switch}: False' to set")
        text = text.replace(f"{switch}: False", f"{switch}: {value}")
    config = os.path.join(work, "sb.yaml")
    with open(config, "w") as f:
        f.write(text)
    return config


TOKENS = re.compile(r"Step:\s+(\d+),.*Tokens per Sec:\s+([\d.]+)")
PARAMS = re.compile(r"Total params:\s*([\d,]+)")
DECODING = re.compile(r"on (\w+) set\.\.\.")
GENERATION = re.compile(r"Generation took ([\d.]+)\[sec\]")
BLEU = re.compile(r"Evaluation result \(beam search\):?\s*bleu:\s+([\d.]+)")


def parse_log(text):
    """Figures from a JoeyNMT train log (see `train_one_epoch`)."""
    result = {"train_windows": [(int(s), float(t)) for s, t in TOKENS.findall(text)]}
    match = PARAMS.search(text)
    if match:
        result["parameters"] = int(match.group(1).replace(",", ""))
    current = None
    for line in text.splitlines():
        found = DECODING.search(line)
        if found:
            current = found.group(1)
        found = GENERATION.search(line)
        if found and current:
            result[f"{current}_decode_seconds"] = float(found.group(1))
        found = BLEU.search(line)
        if found and current:
            result[f"{current}_bleu"] = float(found.group(1))
    return result


def mean_output_tokens(work=WORK, split="test"):
    """Mean length (words) of JoeyNMT's closing beam-search outputs on `split`."""
    with open(os.path.join(work, "model", f"best.hyps.{split}"), encoding="utf-8") as f:
        lines = f.read().splitlines()
    return sum(len(line.split()) for line in lines) / len(lines)


def train_one_epoch(work=WORK, reuse=True, python=None, cuda=False, fp16=False):
    """Train JoeyNMT on SB (460 updates), then let it decode val and test2016 (beam 5).

    Returns the parsed figures (see `parse_log`) plus `wall_seconds` and `log`. With
    `reuse`, a finished earlier run in `work` is parsed instead of trained again. `python`:
    an interpreter that imports joeynmt (default: benchmarks/.joeynmt-venv, made if
    missing); `cuda`, `fp16`: see `prepare` (otherwise the GPU is hidden from JoeyNMT).
    """
    log_path = os.path.join(work, "train.log")
    if reuse and os.path.exists(log_path):
        with open(log_path) as f:
            text = f.read()
        if "test_decode_seconds" in parse_log(text):
            result = parse_log(text)
            result.update(log=log_path, reused=True)
            return result
    python = python or ensure_venv()
    shutil.rmtree(work, ignore_errors=True)
    config = prepare(work, cuda, fp16)
    env = dict(os.environ) if cuda else dict(os.environ, CUDA_VISIBLE_DEVICES="")
    start = time.perf_counter()
    with open(log_path, "w") as log:
        process = subprocess.run([python, "-m", "joeynmt", "train", config], stdout=log,
                                 stderr=subprocess.STDOUT, env=env, cwd=work)
    wall = time.perf_counter() - start
    with open(log_path) as f:
        text = f.read()
    if process.returncode:
        raise SystemExit(f"JoeyNMT failed (exit {process.returncode}); see {log_path}:\n"
                         + text[-3000:])
    result = parse_log(text)
    result.update(log=log_path, wall_seconds=round(wall, 1), reused=False)
    return result


def decode_test(work=WORK):
    """Decode val and test2016 again with the trained run's best checkpoint (`joeynmt test`).

    Lets a benchmark time JoeyNMT's beam search in the same run as ours. Returns
    `parse_log` figures of this decode (`test_decode_seconds`, `test_bleu`, ...) and `log`.
    """
    python = ensure_venv()
    log_path = os.path.join(work, "test_again.log")
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    with open(log_path, "w") as log:
        process = subprocess.run([python, "-m", "joeynmt", "test", os.path.join(work, "sb.yaml"),
                                  "--output-path", os.path.join(work, "test_again")],
                                 stdout=log, stderr=subprocess.STDOUT, env=env, cwd=work)
    with open(log_path) as f:
        text = f.read()
    if process.returncode or "test_decode_seconds" not in parse_log(text):
        raise SystemExit(f"joeynmt test failed (exit {process.returncode}); see {log_path}:\n"
                         + text[-3000:])
    return {**parse_log(text), "log": log_path}
