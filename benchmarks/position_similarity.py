"""How alike a trained encoder's outputs are across the source positions of a sentence.

    python benchmarks/position_similarity.py \
        benchmarks/work/quality/self-attention-encoder-plateau-lsw2s-postln-seed0 \
        benchmarks/work/quality/self-attention-encoder-plateau-lsw2s-seed0 \
        benchmarks/work/quality/bahdanau-plateau-lsw2s-seed0

Attention can only tell source words apart if the encoder's memory does: when every position
of a sentence carries nearly the same vector (rank collapse), any attention weights give
nearly the same context and the decoder translates from a bag of words. For every test2016
sentence (its tokens and `</s>`) this script takes the mean cosine similarity over the pairs
of distinct positions of the encoder's memory, and averages it over sentences: near 1 is
collapse. For a self-attention encoder it also prints the residual stream at the stack's
input (scaled embeddings plus sinusoidal positions) and after each block
(`SelfAttentionEncoder.block_outputs`).
"""

import argparse
import os

import numpy as np
from sb import data_dir


def mean_pairwise_cosine(vectors):
    """Mean cosine similarity over the pairs of distinct rows of `vectors` (n, d), n >= 2."""
    vectors = np.asarray(vectors, "float64")
    if vectors.ndim != 2 or vectors.shape[0] < 2:
        raise ValueError(f"need at least 2 vectors as rows of a matrix: {vectors.shape}")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms > 0, norms, 1.0)
    similarity = unit @ unit.T
    n = len(vectors)
    return float((similarity.sum() - np.trace(similarity)) / (n * (n - 1)))


def encoder_layers(model, source_ids):
    """{name: (batch, source_len, width) array} of one batch, and its mask (batch, len)."""
    from keras import ops

    memory, mask, _ = model.encoder(source_ids, training=False)
    layers = {}
    if hasattr(model.encoder, "block_outputs"):
        outputs, _ = model.encoder.block_outputs(source_ids, training=False)
        layers["input"] = outputs[0]
        for i, output in enumerate(outputs[1:], 1):
            layers[f"block {i}"] = output
    layers["memory"] = memory
    return ({name: ops.convert_to_numpy(ops.cast(x, "float32")) for name, x in layers.items()},
            ops.convert_to_numpy(mask))


def run_similarity(run_dir, sources, batch_size=64):
    """{layer name: mean over sentences of `mean_pairwise_cosine`} for one run."""
    from keras_rnmt.translator import Translator

    translator = Translator.from_run(run_dir)
    eos = translator.source_tokenizer.eos_id
    source_ids = [ids + [eos] for ids in translator.source_tokenizer.tokenize(sources).to_list()]
    source_ids = [ids for ids in source_ids if len(ids) >= 2]
    order = sorted(range(len(source_ids)), key=lambda i: len(source_ids[i]))
    values = {}
    for start in range(0, len(order), batch_size):
        rows = [source_ids[i] for i in order[start:start + batch_size]]
        width = max(len(row) for row in rows)
        batch = np.array([row + [0] * (width - len(row)) for row in rows], "int32")
        layers, _ = encoder_layers(translator.model, batch)
        for name, array in layers.items():
            values.setdefault(name, []).extend(
                mean_pairwise_cosine(array[row, :len(ids)]) for row, ids in enumerate(rows))
    return {name: float(np.mean(cosines)) for name, cosines in values.items()}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", help="run directories (keras-rnmt train --run-dir)")
    parser.add_argument("--source", help="source sentences (default: test2016's English)")
    args = parser.parse_args(argv)
    source = args.source or os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.en")
    with open(source, encoding="utf-8") as f:
        sources = f.read().splitlines()
    print(f"mean cosine between the positions of each of {len(sources)} sentences of {source}")
    for run_dir in args.runs:
        similarity = run_similarity(run_dir, sources)
        cells = ", ".join(f"{name} {value:.4f}" for name, value in similarity.items())
        print(f"{os.path.basename(os.path.normpath(run_dir))}: {cells}", flush=True)


if __name__ == "__main__":
    main()
