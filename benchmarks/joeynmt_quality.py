"""The peer's quality: JoeyNMT 2.3.0 trained to convergence on SB with our plateau recipe.

    python benchmarks/joeynmt_quality.py                    # 12 epochs, about 65 min here
    python benchmarks/joeynmt_quality.py --more-epochs 4    # then 4 more (joeynmt-plateau-cont)
    python benchmarks/joeynmt_quality.py --seed 1

The config is the peer's (`joeynmt_peer.config_text`: the shared SB yaml at SB's learning
rate and initial weights) with the training of RESULTS §4's plateau rows (`quality.py --set
epochs=12 patience=4 lr_decay=0.5 lr_patience=1 dropout=0.3`) in JoeyNMT's terms:
- `epochs: 12` and no update cap; one validation an epoch (`validation_freq`: the epoch's
  updates; `logging_freq` the same, as JoeyNMT requires a divisor), greedy, on BLEU
  (`early_stopping_metric: "bleu"`); the best checkpoint is kept;
- `scheduling: "plateau"`, `decrease_factor: 0.5`, `patience: 0`: torch's patience 0 halves
  the rate after the first validation without a new best, as `patience=1` does in Keras;
- dropout 0.3 (encoder, decoder, decoder hidden), as `dropout=0.3` in ours.
JoeyNMT has no early stopping, so it always runs the 12 epochs; ours stops after 4 without a
new best. JoeyNMT 2.3.0 passes `verbose=False` to torch's `ReduceLROnPlateau`, a keyword
torch 2.13 no longer takes; training therefore runs through `PATCHED_TRAIN`, which only drops
that keyword.

`--more-epochs N` continues the finished run from its last checkpoint, with its optimizer,
plateau state and best score (`continued_config`); the record is `joeynmt-plateau-cont-seedS`.

The best checkpoint then decodes test2016 with `joeynmt test` at beam 5 and 12 (length
penalty alpha 1.0, as ours; beam 5 gives the same outputs as JoeyNMT's closing test after
training, which is skipped), and each output is scored as
`quality.py` scores ours (tokenised lowercased and detokenised BLEU; JoeyNMT has no UNK
replacement). The small files (config, JoeyNMT's validation report, test outputs,
`scores.json`) go to `RECORDS/joeynmt-plateau-seedS/`; the checkpoints stay in WORK.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import time

import joeynmt_peer
from joeynmt_peer import set_key
from quality import bleu_row, read
from sb import ROOT, exit_on_sigterm

HERE = os.path.dirname(os.path.abspath(__file__))

PATCHED_TRAIN = """
import sys
import torch.optim.lr_scheduler as schedulers
import joeynmt.builders as builders


class ReduceLROnPlateau(schedulers.ReduceLROnPlateau):
    def __init__(self, *args, verbose=None, **kwargs):  # gone from torch 2.13
        super().__init__(*args, **kwargs)


builders.ReduceLROnPlateau = ReduceLROnPlateau
from joeynmt.__main__ import main
sys.argv = ["joeynmt", "train", *sys.argv[1:]]
main()
"""


def updates_per_epoch(batch_size=64, max_length=50):
    """JoeyNMT's updates an epoch: its training pairs (1 to `max_length` words a side) in
    batches of `batch_size` sentences, the last one partial."""
    from keras_rnmt.data.corpus import filter_pairs

    source, target = (read(f"train.lc.norm.tok.{lang}") for lang in ("en", "de"))
    kept, _, _ = filter_pairs(source, target, max_length=max_length)
    return math.ceil(len(kept) / batch_size)


def quality_config(text, seed, epochs, updates, path="config"):
    """The peer config `text` with the plateau recipe's training (see the module docstring)."""
    for key, value in (("random_seed", seed), ("epochs", epochs),
                       ("validation_freq", updates), ("logging_freq", updates),
                       ("scheduling", '"plateau"'),
                       ("decrease_factor", 0.5), ("early_stopping_metric", '"bleu"')):
        text = set_key(text, key, value, path)
    text = re.sub(r"^[ \t]*updates:.*\n", "", text, flags=re.MULTILINE)
    text = set_key(text, "learning_rate_min", "0.00001", path, then=("patience", 0))
    if len(re.findall(r"^[ \t]*(hidden_)?dropout:[ \t]*0\.2[ \t]*$", text, re.MULTILINE)) != 3:
        raise SystemExit(f"{path}: expected three dropout lines of 0.2")
    return re.sub(r"^([ \t]*(hidden_)?dropout:)[ \t]*0\.2[ \t]*$", r"\1 0.3", text,
                  flags=re.MULTILINE)


def bleu(outputs):
    """Tokenised lowercased and detokenised BLEU on test2016, as `quality.score` computes."""
    tokenised = read("test_2016_flickr.lc.norm.tok.de")
    if len(outputs) != len(tokenised):
        raise SystemExit(f"{len(outputs)} outputs for {len(tokenised)} test sentences")
    return bleu_row(outputs, tokenised, read("test_2016_flickr.de.gz"))


def run(python, *command_args, log_path, cwd):
    """Run the venv's `python` with `command_args` in `cwd`, its output to `log_path`."""
    with open(log_path, "w") as log:
        process = subprocess.run([python, *command_args], stdout=log,
                                 stderr=subprocess.STDOUT, cwd=cwd,
                                 env=dict(os.environ, CUDA_VISIBLE_DEVICES=""))
    if process.returncode:
        with open(log_path) as f:
            tail = f.read()[-3000:]
        raise SystemExit(f"JoeyNMT failed (exit {process.returncode}); see {log_path}:\n{tail}")


def continued_config(text, checkpoint, model_dir, more_epochs, path="config"):
    """The finished run's config `text` set to train `more_epochs` more epochs from its last
    `checkpoint` into `model_dir`, with its optimizer, plateau state and best score kept.

    JoeyNMT restores the checkpoint's epoch counter and starts its loop at that epoch again
    (`range(stats.epochs, epochs + 1)`), so N more epochs after epoch E is `epochs: E+N-1`.
    """
    epochs = int(re.search(r"^[ \t]*epochs:[ \t]*(\d+)", text, re.MULTILINE).group(1))
    text = set_key(text, "epochs", epochs + more_epochs - 1, path,
                   then=("load_model", f'"{checkpoint}"'))
    return set_key(text, "model_dir", f'"{model_dir}"', path)


def last_checkpoint(model):
    """The highest-numbered `STEP.ckpt` in a JoeyNMT model folder."""
    steps = [int(name[:-5]) for name in os.listdir(model)
             if name.endswith(".ckpt") and name[:-5].isdigit()]
    if not steps:
        raise SystemExit(f"no STEP.ckpt in {model}")
    return os.path.join(model, f"{max(steps)}.ckpt")


def decode(python, work, text, beam, checkpoint):
    """`joeynmt test` of `checkpoint` with beam `beam`: its test2016 outputs (WORK/beamB.test)."""
    config = os.path.join(work, f"beam{beam}.yaml")
    text = re.sub(r"^[ \t]*load_model:.*\n", "", text, flags=re.MULTILINE)
    with open(config, "w") as f:
        f.write(set_key(text, "beam_size", beam, config, then=("load_model", f'"{checkpoint}"')))
    run(python, "-m", "joeynmt", "test", config, "--output-path",
        os.path.join(work, f"beam{beam}"), log_path=os.path.join(work, f"beam{beam}.log"),
        cwd=work)
    return os.path.join(work, f"beam{beam}.test")


def train_and_score(python, work, config, text, fallback_best=None):
    """Write `text` to `config`, train in `work`, then decode test2016 at beam 5 and 12 with
    the best checkpoint (`fallback_best` when a continued run found no better one) and score."""
    with open(config, "w") as f:
        f.write(text)
    model = re.search(r'^[ \t]*model_dir:[ \t]*"(.*)"', text, re.MULTILINE).group(1)
    print(f"training in {work} (log: {model}/train.log) ...", flush=True)
    start = time.perf_counter()
    run(python, "-c", PATCHED_TRAIN, config, "--skip-test",
        log_path=os.path.join(work, "train.out"), cwd=work)
    seconds = time.perf_counter() - start

    best_checkpoint = os.path.join(model, "best.ckpt")
    if not os.path.exists(best_checkpoint):
        best_checkpoint = fallback_best
    outputs = {beam: decode(python, work, text, beam, os.path.realpath(best_checkpoint))
               for beam in (5, 12)}
    with open(os.path.join(model, "train.log")) as f:
        log = f.read()
    parameters = int(re.search(r"Total params:\s*([\d,]+)", log).group(1).replace(",", ""))
    best = re.findall(r"Best validation result \(greedy\) at step\s+(\d+):\s+([\d.]+) bleu", log)
    from keras_rnmt.data import read_lines

    scores = {f"beam{beam}": bleu(read_lines(path)) for beam, path in outputs.items()}
    kept = ((config, "config.yaml"), (os.path.join(model, "validations.txt"), "validations.txt"),
            (outputs[5], "test_hypotheses.txt"), (outputs[12], "test_hypotheses_beam12.txt"))
    return {"run_dir": os.path.relpath(work, ROOT), "system": "joeynmt 2.3.0 (pytorch)",
            "training_seconds": round(seconds, 1),
            "best_checkpoint": os.path.relpath(os.path.realpath(best_checkpoint), ROOT),
            "best_step": int(best[-1][0]) if best else None,
            "best_validation_bleu": float(best[-1][1]) if best else None,
            "parameters": parameters, "scores": scores}, kept


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--epochs", type=int, default=12)
    parser.add_argument("--more-epochs", type=int, default=0, metavar="N",
                        help="continue the finished run of --seed for N more epochs (plateau "
                             "state kept) as joeynmt-plateau-cont-seedS")
    parser.add_argument("--work", default=os.path.join(HERE, "work", "joeynmt-quality"))
    parser.add_argument("--records", default=os.path.join(HERE, "runs"))
    args = parser.parse_args(argv)
    exit_on_sigterm()

    python = joeynmt_peer.ensure_venv()
    name = f"joeynmt-plateau-seed{args.seed}"
    earlier = os.path.join(os.path.abspath(args.work), name)
    if args.more_epochs:
        with open(os.path.join(args.records, name, "scores.json")) as f:
            before = json.load(f)
        name = f"joeynmt-plateau-cont-seed{args.seed}"
    work = os.path.join(os.path.abspath(args.work), name)
    shutil.rmtree(work, ignore_errors=True)
    if args.more_epochs:
        os.makedirs(work)
        config = os.path.join(work, "sb.yaml")
        with open(os.path.join(earlier, "sb.yaml")) as f:
            text = continued_config(f.read(), last_checkpoint(os.path.join(earlier, "model")),
                                    os.path.join(work, "model"), args.more_epochs, config)
        epochs, earlier_seconds = before["epochs_run"] + args.more_epochs, before["training_seconds"]
    else:
        config = joeynmt_peer.prepare(work)  # the data files and the peer config
        with open(config) as f:
            text = quality_config(f.read(), args.seed, args.epochs, updates_per_epoch(), config)
        epochs, earlier_seconds = args.epochs, 0.0
    result, kept = train_and_score(
        python, work, config, text,
        os.path.join(earlier, "model", "best.ckpt") if args.more_epochs else None)
    result.update(epochs_run=epochs, training_seconds=result["training_seconds"] + earlier_seconds,
                  init_from=os.path.relpath(earlier, ROOT) if args.more_epochs else None)
    record = os.path.join(args.records, name)
    os.makedirs(record, exist_ok=True)
    for source, target in kept:
        shutil.copyfile(source, os.path.join(record, target))
    with open(os.path.join(record, "scores.json"), "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
