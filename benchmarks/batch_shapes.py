"""Batch shapes of SB's training and validation datasets: the programs a compiled backend
builds, by bucket width, with and without merged leftover training batches (the validation
batches are always merged).

    python benchmarks/batch_shapes.py                       # widths 1 and 2, a few seconds
    python benchmarks/batch_shapes.py --widths 1 4 --set batch_size=32

The datasets are the ones `keras-rnmt train` builds from `recipes/multi30k.py`
(`keras_rnmt.training.train.training_datasets`). For each width and `merge_remainders`
setting, one epoch of each: batches, distinct batch shapes (under JAX and TensorFlow's XLA,
one compiled program each), batches of fewer sentences than `batch_size`, and the share of
target positions that are padding. No model runs; the figures do not depend on the backend.
"""

import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from sb import report, sb_config  # noqa: E402


def epoch_figures(dataset, batch_size):
    shapes, sentences, incomplete, real, positions = collections.Counter(), 0, 0, 0, 0
    for (source, _), target_out in dataset:
        target_out = np.asarray(target_out)
        shapes[tuple(source.shape)] += 1
        sentences += int((target_out != 0).any(axis=1).sum())
        incomplete += source.shape[0] < batch_size
        real += int((target_out != 0).sum())
        positions += target_out.size
    return {"batches": sum(shapes.values()), "shapes": len(shapes),
            "incomplete_batches": int(incomplete), "sentences": sentences,
            "target_padding": round(1 - real / positions, 4)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--widths", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="SB config changes, e.g. batch_size=32")
    parser.add_argument("--json", default="", help="also write the figures here")
    args = parser.parse_args(argv)
    from keras_rnmt.training.train import prepare_data, training_datasets

    changes = dict(item.split("=", 1) for item in args.set)
    varied = sorted({"bucket_width", "merge_remainders"} & set(changes))
    if varied:
        parser.error(f"--set {', '.join(varied)}: this script varies bucket_width (--widths) "
                     "and merge_remainders (both settings) itself")
    splits, source_tokenizer, target_tokenizer = prepare_data(sb_config(**changes))
    rows = []
    for width in args.widths:
        for merge in (False, True):
            config = sb_config(**changes, bucket_width=str(width),
                               merge_remainders=str(merge).lower())
            train, valid = training_datasets(config, splits, source_tokenizer, target_tokenizer)
            row = {"bucket_width": width, "merge_remainders": merge,
                   "train": epoch_figures(train, config.batch_size),
                   "val": epoch_figures(valid, config.batch_size)}
            rows.append(row)
            print(f"width {width}, merge_remainders={merge}: " + "; ".join(
                f"{split} {row[split]['batches']} batches, {row[split]['shapes']} shapes, "
                f"{row[split]['incomplete_batches']} incomplete, target padding "
                f"{100 * row[split]['target_padding']:.2f}%" for split in ("train", "val")))
    report({"rows": rows}, args.json)


if __name__ == "__main__":
    main()
