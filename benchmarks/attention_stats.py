"""How trained runs attend on test2016: coverage of the source (fertility) and movement.

    python benchmarks/attention_stats.py benchmarks/work/quality/bahdanau-plateau-seed0 \
        benchmarks/work/quality/recurrent-k5-plateau-seed0            # forced on the references
    python benchmarks/attention_stats.py RUN [RUN ...] --forced output  # each run's beam-5 output

Recurrent attention gives every source word a memory of the attention it has received so
that the model can learn fertility (how much of a word is translated) and distortion (where
attention moves next; Yang et al. §2.2). This script reads the attention itself. For every
test2016 sentence it takes a run's attention weights α (target positions × source tokens,
`</s>` included on both sides), either teacher-forced on the reference (`--forced
reference`, the default: every run attends while producing the same words;
`TranslationModel.attention_weights`) or from the run's own beam search (`--forced output`:
`Translator.translate`'s attention rows, beam 5). Per run it prints the means over sentences
of `sentence_statistics`:

- re-attention: the share of the attention mass that goes to source words whose attention
  so far (summed over the earlier target positions) already reaches 1: attending again to a
  word already translated, what produces repeated phrases;
- over-attended and neglected words: the share of source tokens whose total attention (their
  fertility, Σ_t α_ti) exceeds 2, or stays under 0.3;
- backward jumps: the share of target steps whose expected source position (Σ_i i·α_ti)
  moves back by more than one token;
- entropy: of each target position's weights, in nats (how spread the attention is).

The weights are computed in float32, whatever precision the run trained in.
"""

import argparse
import os

import numpy as np
from sb import data_dir

STATISTICS = ("re-attention", "over-attended", "neglected", "backward jumps", "entropy")


def sentence_statistics(weights):
    """The statistics of one sentence's attention `weights` (T, S), rows summing to 1:
    {name: float} for the names of `STATISTICS`."""
    weights = np.asarray(weights, "float64")
    if weights.ndim != 2 or not weights.size:
        raise ValueError(f"weights must be a non-empty (target, source) matrix: {weights.shape}")
    received_before = np.cumsum(weights, axis=0) - weights  # row t: attention before step t
    fertility = weights.sum(axis=0)
    positions = weights @ np.arange(weights.shape[1])
    jumps = np.diff(positions)
    entropy = -np.sum(weights * np.log(np.where(weights > 0, weights, 1.0)), axis=1)
    return {
        "re-attention": float(np.sum(weights * (received_before >= 1.0)) / weights.shape[0]),
        "over-attended": float(np.mean(fertility > 2.0)),
        "neglected": float(np.mean(fertility < 0.3)),
        "backward jumps": float(np.mean(jumps < -1.0)) if jumps.size else 0.0,
        "entropy": float(np.mean(entropy)),
    }


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().splitlines()


def forced_on_references(translator, sources, references, batch_size=64):
    """Teacher-forced weights of every pair, each (len(reference) + 1, len(source) + 1)."""
    from keras import ops

    eos = translator.source_tokenizer.eos_id
    source_ids = [ids + [eos] for ids in translator.source_tokenizer.tokenize(sources).to_list()]
    target_ids = [ids + [translator.target_tokenizer.eos_id]
                  for ids in translator.target_tokenizer.tokenize(references).to_list()]
    order = sorted(range(len(sources)), key=lambda i: (len(source_ids[i]), len(target_ids[i])))
    weights = [None] * len(sources)
    for start in range(0, len(order), batch_size):
        chunk = order[start:start + batch_size]
        source = pad([source_ids[i] for i in chunk])
        target_in = pad([[translator.target_tokenizer.bos_id] + target_ids[i][:-1]
                         for i in chunk])
        batch = ops.convert_to_numpy(translator.model.attention_weights(source, target_in))
        for row, i in enumerate(chunk):
            weights[i] = batch[row, :len(target_ids[i]), :len(source_ids[i])]
    return weights


def from_outputs(translator, sources):
    """The weights of each run's own translation (`Translation.attention`)."""
    return [translation.attention for translation in translator.translate(sources)]


def pad(rows):
    width = max(len(row) for row in rows)
    return np.array([row + [0] * (width - len(row)) for row in rows], "int32")


def run_statistics(run_dir, sources, references, forced):
    """{name: mean over sentences} for one run."""
    from keras_rnmt.translator import Translator

    translator = Translator.from_run(run_dir, beam_size=5)
    if forced == "reference":
        weights = forced_on_references(translator, sources, references)
    else:
        weights = from_outputs(translator, sources)
    rows = [sentence_statistics(w) for w in weights if w is not None and w.size]
    return {name: float(np.mean([row[name] for row in rows])) for name in STATISTICS}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run directories (keras-rnmt train --run-dir)")
    parser.add_argument("--forced", choices=["reference", "output"], default="reference",
                        help="attention teacher-forced on the reference, or of the run's own "
                             "beam-5 translation (default: %(default)s)")
    parser.add_argument("--source", help="source sentences (default: test2016's English)")
    parser.add_argument("--reference", help="references (default: test2016's German)")
    args = parser.parse_args(argv)
    if bool(args.source) != bool(args.reference):
        parser.error("--source and --reference go together")
    if not args.source:
        folder = data_dir()
        args.source = os.path.join(folder, "test_2016_flickr.lc.norm.tok.en")
        args.reference = os.path.join(folder, "test_2016_flickr.lc.norm.tok.de")
    sources, references = read_lines(args.source), read_lines(args.reference)
    if len(sources) != len(references):
        raise SystemExit(f"{args.source} has {len(sources)} lines, {args.reference} "
                         f"{len(references)}")
    print(f"attention on {len(sources)} sentences of {args.source}, forced on the "
          f"{args.forced}")
    print("| run | " + " | ".join(STATISTICS) + " |")
    print("|---|" + "---:|" * len(STATISTICS))
    for run_dir in args.runs:
        means = run_statistics(run_dir, sources, references, args.forced)
        cells = [f"{100 * means[name]:.2f}%" for name in STATISTICS[:-1]]
        print(f"| {os.path.basename(os.path.normpath(run_dir))} | " + " | ".join(cells)
              + f" | {means['entropy']:.3f} |", flush=True)


if __name__ == "__main__":
    main()
