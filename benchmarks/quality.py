"""Quality on Multi30k en→de test2016: train recipes to convergence, score them the literature's way.

    python benchmarks/quality.py                                   # every model (many hours here)
    python benchmarks/quality.py --models bahdanau recurrent-k5 --seeds 0 1 2
    python benchmarks/quality.py --models recurrent-k5 --work /tmp/q --records /tmp/q/runs \
        --set epochs=1 steps_per_epoch=20 validation_sentences=64  # a smoke run, minutes
    python benchmarks/quality.py --models bahdanau --seeds 0 --tag=-ft \
        --init-from benchmarks/work/quality --set epochs=3 learning_rate=2.5e-4  # continue
    python benchmarks/quality.py --models bahdanau --tag=-plateau-cont --init-tag=-plateau \
        --init-from benchmarks/work/quality --set learning_rate=1.25e-4  # continue a tagged run
    python benchmarks/quality.py --table benchmarks/runs/*-plateau-seed*/scores.json  # tabulate

Each (model, seed) trains with `train_and_evaluate` (`recipes/multi30k.py`, early stopping on
greedy validation BLEU, best model kept) into `WORK/NAME-seedS` (`NAME{tag}-seedS` with
`--tag`; `--init-from FOLDER` starts each run from the weights of `FOLDER/NAME-seedS`
(`FOLDER/NAME{init-tag}-seedS` with `--init-tag`), and
its epochs and training time then include that run's). A killed run resumes from its
`backup/` when started again; a finished one (`results.json` present) is only re-scored.
Scoring on the 1,000 test2016 sentences, for beam 5 and 12, each without and with UNK
replacement (Yang et al. §3.3):
- tokenised lowercased BLEU: sacreBLEU `tokenize="none"` against `lc.norm.tok` (multi-bleu.perl's
  figure, the one published Multi30k results use);
- detokenised BLEU: the output Moses-detokenised, sacreBLEU 13a against the raw references,
  case-insensitive (the models are trained on lowercased text; the signature says `case:lc`).
Prints a markdown table (mean ± sd over seeds) and writes `WORK/quality.json`. The small
files of each run (config, data report, training log, results, test outputs, scores) are
copied to `benchmarks/runs/NAME-seedS/` for git; the models stay in WORK.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

from sb import ROOT, data_dir, exit_on_sigterm

HERE = os.path.dirname(os.path.abspath(__file__))
RECORDS = os.path.join(HERE, "runs")
KEPT_FILES = ("config.json", "data_report.json", "log.csv", "results.json",
              "test_hypotheses.txt")
MODELS = {
    "no-attention": ["attention=none"],
    "bahdanau": [],
    "luong-general": ["attention=general"],
    "luong-dot": ["attention=dot"],
    "luong-concat": ["attention=concat"],
    "local-m": ["attention=local-m", "window=10"],  # Luong et al.'s D
    "local-p": ["attention=local-p", "window=10"],  # Luong et al.'s D
    "local-p-d5": ["attention=local-p", "window=5"],
    "coverage": ["attention=coverage"],
    # Memory 128 (not the paper's 256, half the decoder): 1.33x Bahdanau's training time
    # instead of 1.75x (RESULTS.md §3).
    "recurrent-k0": ["attention=recurrent", "window=0", "memory_units=128"],
    "recurrent-k5": ["attention=recurrent", "window=5", "memory_units=128"],
    "transformer": [],
    # Bahdanau attention over keras-hub Transformer encoder blocks instead of the bi-LSTM.
    "self-attention-encoder": ["encoder_type=self-attention"],
}
# Every model is `recipes/multi30k.py` with MODELS' overrides, except these.
RECIPES = {"transformer": "multi30k_transformer.py"}
SETTINGS = [(5, False), (5, True), (12, False), (12, True)]
# Their names in the scores: beam5, beam5+unk, beam12, beam12+unk.
SETTING_NAMES = [f"beam{beam}{'+unk' if unk else ''}" for beam, unk in SETTINGS]


def moses_detokenize(text):
    """Undo Moses tokenisation of Multi30k's `lc.norm.tok` text (escapes, punctuation spacing).

    >>> moses_detokenize('ein mann , der &quot; hallo &quot; sagt ( lachend ) .')
    'ein mann, der "hallo" sagt (lachend).'
    """
    for escaped, plain in (("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"), ("&lt;", "<"),
                           ("&gt;", ">"), (" @-@ ", "-")):
        text = text.replace(escaped, plain)
    words, quote_open = [], False
    for word in text.split():
        attach_left = word in {".", ",", "!", "?", ";", ":", "%", ")", "]", "}"} or (
            word.startswith("'") and len(word) > 1)
        if word == '"':
            attach_left, quote_open = quote_open, not quote_open
        if words and (attach_left or words[-1] in {"(", "[", "{"}
                      or (words[-1] == '"' and quote_open and word != '"')):
            words[-1] += word
        else:
            words.append(word)
    return " ".join(words)


def read(name):
    from keras_rnmt.data import read_lines

    return read_lines(os.path.join(data_dir(), name))


def recipe_path(name):
    """The recipe file model `name` trains from (`MODELS` gives its overrides)."""
    return os.path.join(ROOT, "recipes", RECIPES.get(name, "multi30k.py"))


def train(name, seed, work, settings, tag="", init_from="", init_tag=""):
    """Train (or resume) one run in a subprocess, so each starts from a fresh Keras state.

    The run is `WORK/NAME{tag}-seedS`; with `init_from`, it continues from the weights of
    `init_from/NAME{init_tag}-seedS` (same model and seed, e.g. with a lower learning rate).
    """
    run_dir = os.path.join(work, f"{name}{tag}-seed{seed}")
    if os.path.exists(os.path.join(run_dir, "results.json")):
        return run_dir
    keras_rnmt = os.path.join(os.path.dirname(sys.executable), "keras-rnmt")
    overrides = MODELS[name] + [f"seed={seed}", f"data_dir={data_dir()}"] + list(settings)
    if init_from:
        earlier = os.path.abspath(os.path.join(init_from, f"{name}{init_tag}-seed{seed}"))
        overrides.append(f"init_from={earlier}")
    command = [keras_rnmt, "train", recipe_path(name),
               "--run-dir", run_dir, *[f"--{item}" for item in overrides]]
    print("$ " + " ".join(command), flush=True)
    subprocess.run(command, check=True)
    return run_dir


def score(run_dir, stop_rule="current", model_file="best.keras", length_penalty=None,
          hypotheses=None):
    """Test2016 BLEU for every (beam, UNK replacement) setting of `SETTINGS`.

    `model_file` (in `run_dir`, e.g. an averaged model) and `length_penalty` (default: the
    run's) choose what is scored; both are recorded in the result only when given. With
    `hypotheses` (a dict), each setting's output texts are put in it under the setting's name.
    """
    from keras_rnmt.translator import Translator

    sources = read("test_2016_flickr.lc.norm.tok.en")
    tokenised = read("test_2016_flickr.lc.norm.tok.de")
    raw = read("test_2016_flickr.de.gz")
    with open(os.path.join(run_dir, "results.json")) as f:
        trained = json.load(f)
    chosen = {} if length_penalty is None else {"length_penalty": length_penalty}
    rows, searched = {}, {}
    for (beam, unk), name in zip(SETTINGS, SETTING_NAMES):
        # One search per beam size: UNK replacement reads the same search's attention.
        if beam not in searched:
            translator = Translator.from_run(run_dir, model_file=model_file, beam_size=beam,
                                             stop_rule=stop_rule, **chosen)
            searched[beam] = translator, translator.translate(sources)
        translator, translations = searched[beam]
        outputs = [translator.unk_replaced(t) if unk else t.text for t in translations]
        if hypotheses is not None:
            hypotheses[name] = list(outputs)
        rows[name] = bleu_row(outputs, tokenised, raw)
    # A continued run's cost includes the runs it started from.
    cost = total_cost(run_dir)
    if model_file != "best.keras":
        chosen["model_file"] = model_file
    return {"run_dir": run_dir, "stop_rule": stop_rule, **chosen, **cost,
            "backend": trained["backend"], "parameters": trained["parameters"], "scores": rows}


def bleu_row(outputs, tokenised, raw):
    """One setting's scores: tokenised BLEU of `outputs` against `tokenised` (sacreBLEU
    `tokenize="none"`) and detokenised BLEU of their Moses detokenisation against `raw`
    (13a, case-insensitive), each rounded to 2 places with its signature."""
    from keras_rnmt.evaluation import corpus_scores

    tok = corpus_scores(outputs, tokenised, tokenized=True)
    detok = corpus_scores([moses_detokenize(o) for o in outputs], raw, lowercase=True)
    return {"tokenised_bleu": round(tok.bleu, 2), "tokenised_signature": tok.bleu_signature,
            "detokenised_bleu": round(detok.bleu, 2), "detokenised_signature": detok.bleu_signature}


def total_cost(run_dir):
    """Epochs and training seconds of a run, including the runs it continued from, and the
    run it continued from (relative to the repository; None for a fresh run)."""
    with open(os.path.join(run_dir, "results.json")) as f:
        trained = json.load(f)
    with open(os.path.join(run_dir, "config.json")) as f:
        init_from = json.load(f).get("init_from")
    if init_from:  # relative: to the repository (quality.py runs from its root)
        init_from = os.path.join(ROOT, init_from)
    earlier = total_cost(init_from) if init_from else {"epochs_run": 0, "training_seconds": 0}
    return {"epochs_run": trained["epochs_run"] + earlier["epochs_run"],
            "training_seconds": trained["training_seconds"] + earlier["training_seconds"],
            "init_from": os.path.relpath(init_from, ROOT) if init_from else None}


def keep_record(result, records=RECORDS):
    """Copy a scored run's small files (not its model) to `records` (`benchmarks/runs/`, for
    git)."""
    run_dir = result["run_dir"]
    record = os.path.join(records, os.path.basename(run_dir))
    os.makedirs(record, exist_ok=True)
    for name in KEPT_FILES:
        shutil.copyfile(os.path.join(run_dir, name), os.path.join(record, name))
    with open(os.path.join(record, "scores.json"), "w") as f:
        json.dump({**result, "run_dir": os.path.relpath(run_dir, ROOT)}, f, indent=2)


def mean_sd(values):
    if len(values) == 1:
        return f"{values[0]:.2f}"
    return f"{statistics.mean(values):.2f} ± {statistics.stdev(values):.2f}"


def table(results):
    columns = SETTING_NAMES
    lines = ["| model | seeds | epochs | training h | " + " | ".join(
                 f"{c} tok / detok" for c in columns) + " |",
             "|---" * (4 + len(columns)) + "|"]
    for name, runs in results.items():
        cells = []
        for column in columns:
            if any(column not in r["scores"] for r in runs):  # JoeyNMT's: no UNK replacement
                cells.append("—")
                continue
            tok = [r["scores"][column]["tokenised_bleu"] for r in runs]
            detok = [r["scores"][column]["detokenised_bleu"] for r in runs]
            cells.append(f"{mean_sd(tok)} / {mean_sd(detok)}")
        epochs = "/".join(str(r["epochs_run"]) for r in runs)
        hours = statistics.mean(r["training_seconds"] for r in runs) / 3600
        lines.append(f"| {name} | {len(runs)} | {epochs} | {hours:.2f} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def by_run_name(paths):
    """JSON records of runs (each with its `run_dir`, named NAME-seedS) -> {NAME: [records]}."""
    runs = {}
    for path in sorted(paths):
        with open(path) as f:
            record = json.load(f)
        name = os.path.basename(record["run_dir"].rstrip("/")).rsplit("-seed", 1)[0]
        runs.setdefault(name, []).append(record)
    return runs


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--seeds", nargs="*", type=int, default=[0])
    parser.add_argument("--seeds-for", nargs="*", default=["bahdanau", "recurrent-k5"],
                        help="models trained with every seed of --seeds (the rest: the first)")
    parser.add_argument("--work", default=os.path.join(HERE, "work", "quality"))
    parser.add_argument("--records", default=RECORDS,
                        help="where each scored run's small files go (default: benchmarks/runs,"
                             " kept in git)")
    parser.add_argument("--stop-rule", default="current", choices=["current", "bound"],
                        help="beam search's stop rule for scoring (Translator's default: current)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="training overrides for every run (e.g. epochs=1)")
    parser.add_argument("--tag", default="",
                        help="suffix of the run names (NAME{tag}-seedS), to keep other runs")
    parser.add_argument("--init-from", default="",
                        help="a work folder: continue each run from its NAME-seedS there")
    parser.add_argument("--init-tag", default="",
                        help="with --init-from: continue from NAME{init-tag}-seedS instead")
    parser.add_argument("--table", nargs="*", metavar="SCORES",
                        help="only tabulate these records' scores.json over seeds (train nothing)")
    args = parser.parse_args(argv)
    if args.table:
        return print(table(by_run_name(args.table)))

    # Results of earlier invocations stay in the table; this one's runs replace theirs.
    summary = os.path.join(args.work, "quality.json")
    results = {}
    if os.path.exists(summary):
        with open(summary) as f:
            results = json.load(f)
    for name in args.models:
        seeds = args.seeds if name in args.seeds_for else args.seeds[:1]
        key = name + args.tag
        new = [score(train(name, seed, args.work, args.set, args.tag, args.init_from,
                           args.init_tag),
                     args.stop_rule)
               for seed in seeds]
        for result in new:
            keep_record(result, args.records)
        # Seeds scored by earlier invocations stay, so each seed can have its own invocation.
        scored = {r["run_dir"] for r in new}
        results[key] = sorted([r for r in results.get(key, []) if r["run_dir"] not in scored]
                              + new, key=lambda r: r["run_dir"])
        print(table({key: results[key]}), flush=True)
    print("\nTest2016 BLEU, tokenised lowercased (tok:none) / detokenised (13a, case:lc):\n")
    print(table(results))
    signatures = next(iter(results.values()))[0]["scores"]["beam5"]
    print(f"\nsignatures: {signatures['tokenised_signature']} | "
          f"{signatures['detokenised_signature']}")
    os.makedirs(args.work, exist_ok=True)
    with open(summary, "w") as f:
        json.dump(results, f, indent=2)


if __name__ == "__main__":
    exit_on_sigterm()
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    main()
