"""The peer, JoeyNMT 2.3.0, on SB: its own virtual environment, data folder, config and logs.

    from joeynmt_peer import train_one_epoch
    run = train_one_epoch()      # trains (or reuses) benchmarks/work/joeynmt, parses its log
    run["train_windows"]         # [(step, target tokens/s), ...] as JoeyNMT logs them
    run["test_decode_seconds"]   # its closing beam-5 decode of test2016
    decode_test()["test_decode_seconds"]   # that checkpoint decoding test2016 again, now

The config is `../shared/peer/joeynmt_sb.yaml` (460 updates of 64 sentences, about one
epoch; beam 5, batch 64 at test time) with DATA_DIR and MODEL_DIR filled in, on a GPU
(`cuda=True`, `gpu_joeynmt.py`) its `use_cuda` and `fp16` switches, and one correction so
that JoeyNMT trains at SB's learning rate (`constant_learning_rate`) and another so that it
starts from SB's initial weights (`matched_initialization`).
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


DECREASE_FACTOR = re.compile(r"^(\s*decrease_factor:)\s*\S+\s*$", re.MULTILINE)


def constant_learning_rate(text, path):
    """The config `text` with the exponential scheduler's `decrease_factor` set to 1.0.

    JoeyNMT 2.3.0 steps an epoch-level scheduler at the *start* of every epoch, epoch 1
    included (`training.py`: `scheduler.step(epoch=epoch_no)` before the epoch's first
    update), so with the given `decrease_factor: 0.5` its one SB epoch ran at half of
    `learning_rate` (its log: `Lr: 0.000500`), not at SB's Adam 1e-3. A factor of 1.0 keeps
    the rate the config names for the whole run. Training speed does not depend on the
    rate; the one-epoch checkpoint that the decoding benchmark times does.
    """
    if 'scheduling: "exponential"' not in text or len(DECREASE_FACTOR.findall(text)) != 1:
        raise SystemExit(f"{path}: expected scheduling \"exponential\" with one "
                         "decrease_factor line")
    return DECREASE_FACTOR.sub(r"\1 1.0", text)


def set_key(text, key, value, path="config", then=None):
    """`text` with the one `key:` line's value replaced by `value` (indentation kept); with
    `then`, a `(key, value)` pair written on the next line at the same indentation. Stops
    with the config's `path` unless exactly one such line exists."""
    line = re.compile(rf"^([ \t]*){key}:[ \t]*\S.*$", re.MULTILINE)
    if len(line.findall(text)) != 1:
        raise SystemExit(f"{path}: expected one '{key}:' line")

    def replaced(match):
        indent = match.group(1)
        follow = "" if then is None else f"\n{indent}{then[0]}: {then[1]}"
        return f"{indent}{key}: {value}{follow}"

    return line.sub(replaced, text)


INIT_WEIGHTS = {"initializer": "init_weight", "embed_initializer": "embed_init_weight",
                "bias_initializer": "bias_init_weight"}


def matched_initialization(text, path, scale=0.1):
    """The config `text` with every initializer JoeyNMT's `uniform` in ±`scale`.

    SB draws every weight, embedding and bias uniformly in ±0.1 (`recipes/multi30k.py`,
    `uniform_init=0.1`, after Yang et al. §3.2). The given yaml keeps JoeyNMT's defaults
    instead (Xavier weights, embeddings normal with sd 0.1, zero biases), from which its
    one-epoch checkpoint scored 5.70 BLEU on test2016 against 13.54 from ±0.1 (RESULTS §2,
    2026-11-28). The one difference left: JoeyNMT then sets its LSTM forget-gate biases to 1
    (`lstm_forget_gate`, default 1.0).
    """
    for key, weight in INIT_WEIGHTS.items():
        text = re.sub(rf"^[ \t]*{weight}:.*\n", "", text, flags=re.MULTILINE)
        text = set_key(text, key, '"uniform"', path, then=(weight, scale))
    return text


def configured_learning_rate(text):
    """The `learning_rate:` of a JoeyNMT config's text."""
    return float(re.search(r"^\s*learning_rate:\s*(\S+)\s*$", text, re.MULTILINE).group(1))


def config_text(work=WORK, cuda=False, fp16=False):
    """The config JoeyNMT runs in `work` (see the module docstring)."""
    with open(peer_config_path()) as f:
        text = f.read()
    text = text.replace("DATA_DIR", os.path.join(work, "data"))
    text = text.replace("MODEL_DIR", os.path.join(work, "model"))
    for switch, value in (("use_cuda", cuda), ("fp16", fp16)):
        if f"{switch}: False" not in text:
            raise SystemExit(f"{peer_config_path()} has no '{switch}: False' to set")
        text = text.replace(f"{switch}: False", f"{switch}: {value}")
    text = constant_learning_rate(text, peer_config_path())
    return matched_initialization(text, peer_config_path())


def prepare(work=WORK, cuda=False, fp16=False):
    """Copy the lc.norm.tok files under JoeyNMT's names and write the config
    (`config_text`: on CUDA with `cuda`; float16 autocast and loss scaling with `fp16`)."""
    data = os.path.join(work, "data")
    os.makedirs(data, exist_ok=True)
    source = data_dir()
    for split, name in SPLITS.items():
        for lang in ("en", "de"):
            shutil.copyfile(os.path.join(source, f"{split}.lc.norm.tok.{lang}"),
                            os.path.join(data, f"{name}.{lang}"))
    config = os.path.join(work, "sb.yaml")
    with open(config, "w") as f:
        f.write(config_text(work, cuda, fp16))
    return config


TOKENS = re.compile(r"Step:\s+(\d+),.*Tokens per Sec:\s+([\d.]+)")
LEARNING_RATE = re.compile(r"Step:\s+\d+,.*Lr:\s+([\d.e-]+)")
PARAMS = re.compile(r"Total params:\s*([\d,]+)")
DECODING = re.compile(r"on (\w+) set\.\.\.")
GENERATION = re.compile(r"Generation took ([\d.]+)\[sec\]")
BLEU = re.compile(r"Evaluation result \(beam search\):?\s*bleu:\s+([\d.]+)")


def parse_log(text):
    """Figures from a JoeyNMT train log (see `train_one_epoch`)."""
    result = {"train_windows": [(int(s), float(t)) for s, t in TOKENS.findall(text)],
              "learning_rates": sorted({float(r) for r in LEARNING_RATE.findall(text)})}
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


def same_config(work, cuda, fp16):
    """Whether `work` holds a run of the config `prepare` would write now."""
    path = os.path.join(work, "sb.yaml")
    if not os.path.exists(path):
        return False
    with open(path) as f:
        return f.read() == config_text(work, cuda, fp16)


def train_one_epoch(work=WORK, reuse=True, python=None, cuda=False, fp16=False):
    """Train JoeyNMT on SB (460 updates), then let it decode val and test2016 (beam 5).

    Returns the parsed figures (see `parse_log`) plus `wall_seconds` and `log`. With
    `reuse`, a finished earlier run in `work` of the config `prepare` writes now is parsed
    instead of trained again. `python`: an interpreter that imports joeynmt (default:
    benchmarks/.joeynmt-venv, made if missing); `cuda`, `fp16`: see `prepare` (otherwise
    the GPU is hidden from JoeyNMT). Stops if the log shows a learning rate other than
    the config's.
    """
    log_path = os.path.join(work, "train.log")
    if reuse and os.path.exists(log_path) and same_config(work, cuda, fp16):
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
    expected = configured_learning_rate(config_text(work, cuda, fp16))
    if result["learning_rates"] != [expected]:
        raise SystemExit(f"JoeyNMT trained at learning rates {result['learning_rates']}, "
                         f"not the config's {expected}; see {log_path}")
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
