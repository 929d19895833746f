"""Train and beam-search SB on a GPU under JAX or PyTorch, per dtype policy; print figures.

The check for what only a GPU shows: that `model.fit` trains the SB models on an accelerator
in float32, mixed_float16 (Keras' loss scaling) and mixed_bfloat16 with a finite, falling
loss, and that batched beam search runs there. Two steps, because a GPU machine may lack
TensorFlow, which our tokenizers and tf.data pipeline need:

    # here, with Multi30k: real SB training batches and the test2016 sources, as ids
    python benchmarks/gpu_check.py prepare benchmarks/work/gpu/sb_batches.npz
    # on the GPU machine (keras, keras-hub and this checkout; no TensorFlow needed)
    KERAS_BACKEND=jax python benchmarks/gpu_check.py run sb_batches.npz --out gpu.jsonl

`prepare` takes the training pipeline's batches (`make_dataset`, shuffled, length-bucketed)
and pads each one's lengths up to a multiple of 16, so a compiled backend sees a few shapes.
`run` prints one `RESULT {json}` line per (attention, policy): target tokens/s over the timed
steps (real tokens, padding excluded), the mean loss of the warm-up and of the timed pass,
and sentences/s of beam 5, batch 64 over the 1,000 test2016 sources (plain `beam_search`,
every batch padded to one shape; the first pass compiles, the median of the next three is
reported), with the outputs' tokenised BLEU against the test2016 references `prepare`
stored (sacreBLEU, `tokenize="none"`). The models train for a few hundred steps only: the
BLEU shows that the search translates, and compares with a peer trained as long.

At toy scale on a CPU (`--allow-cpu`; without it `run` refuses a machine with no GPU):

    python benchmarks/gpu_check.py prepare /tmp/toy.npz --batches 4 --set embedding_dim=8 \
        encoder_units=8 decoder_units=16 max_vocabulary=200
    KERAS_BACKEND=jax python benchmarks/gpu_check.py run /tmp/toy.npz --allow-cpu \
        --warmup 1 --steps 2 --sentences 8 --beam-size 2
"""

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

ROUND = 16  # batch lengths are padded up to a multiple of this


def pad_to(array, length):
    """`array` (B, L) with zero columns appended up to `length`."""
    return np.pad(array, ((0, 0), (0, length - array.shape[1])))


def round_up(length):
    return int(math.ceil(length / ROUND) * ROUND)


def prepare(path, count, changes):
    """Write `count` SB training batches (SB with config `changes`) and the test2016 source
    ids to `path` (.npz); `run` trains that config."""
    from sb import data_dir, sb_config

    from keras_rnmt.data import BOS_ID, EOS_ID, make_dataset
    from keras_rnmt.training.train import prepare_data

    config = sb_config(**changes)
    splits, source_tokenizer, target_tokenizer = prepare_data(config, None)
    dataset = make_dataset(*splits["train"], source_tokenizer, target_tokenizer,
                           batch_size=config.batch_size, bucket_width=config.bucket_width,
                           shuffle=True, seed=config.seed, pad_to_bucket=True, repeat=True,
                           shuffle_batches=False)  # the recorded checks' batches (train_worker)
    arrays = {}
    for i, ((source, target_in), target_out) in enumerate(dataset.take(count)
                                                          .as_numpy_iterator()):
        target_length = round_up(target_in.shape[1])
        arrays[f"source_{i}"] = pad_to(source, round_up(source.shape[1]))
        arrays[f"target_in_{i}"] = pad_to(target_in, target_length)
        arrays[f"target_out_{i}"] = pad_to(target_out, target_length)
    with open(os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.en"), encoding="utf-8") as f:
        ids = [row + [EOS_ID] for row in source_tokenizer.tokenize(f.read().splitlines()).to_list()]
    test = np.zeros((len(ids), round_up(max(map(len, ids)))), "int32")
    for row, sentence in enumerate(ids):
        test[row, :len(sentence)] = sentence
    arrays["test_source"] = test
    with open(os.path.join(data_dir(), "test_2016_flickr.lc.norm.tok.de"), encoding="utf-8") as f:
        references = f.read().splitlines()
    info = dict(config=config.to_dict(), bos_id=BOS_ID, eos_id=EOS_ID, batches=count,
                source_vocab_size=source_tokenizer.vocabulary_size(),
                target_vocab_size=target_tokenizer.vocabulary_size(),
                target_vocabulary=list(target_tokenizer.get_vocabulary()),
                test_references=references)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    np.savez_compressed(path, info=json.dumps(info), **arrays)
    shapes = {(arrays[f"source_{i}"].shape, arrays[f"target_in_{i}"].shape) for i in range(count)}
    print(f"wrote {path}: {count} batches in {len(shapes)} shapes, test2016 "
          f"{arrays['test_source'].shape}")


def device_name():
    import keras

    backend = keras.backend.backend()
    if backend == "jax":
        import jax

        return jax.devices()[0].device_kind
    if backend == "torch":
        import torch

        return torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu"
    return backend


def fit_pass(model, batches):
    """One `model.fit` pass over `batches`; returns (seconds, mean loss)."""
    from train_worker import fit_batches

    start = time.perf_counter()
    history = fit_batches(model, batches)
    return time.perf_counter() - start, float(history.history["loss"][-1])


def output_limits(source):
    """Each sentence's output limit, counting </s>: 1.5 |source| + 10, `Translator`'s default."""
    return np.ceil(1.5 * (source != 0).sum(1) + 10).astype("int32")


def beam_pass(search, model, test, batch_size):
    """Beam-search every sentence of `test` (N, S) in batches of `batch_size` (the last one
    padded with copies of its first row); returns (seconds, the best hypotheses' ids (N, T),
    0 after </s>)."""
    from keras import ops

    outputs = []
    start = time.perf_counter()
    for first in range(0, len(test), batch_size):
        batch = test[first:first + batch_size]
        real = len(batch)
        batch = np.concatenate([batch, np.repeat(batch[:1], batch_size - real, 0)])
        tokens, _ = search(model, batch, output_limits(batch))
        outputs.append(ops.convert_to_numpy(tokens)[:real, 0])
    seconds = time.perf_counter() - start
    width = max(o.shape[1] for o in outputs)
    return seconds, np.concatenate([pad_to(o, width) for o in outputs])


def tokenised_bleu(ids, info):
    """Tokenised BLEU (sacreBLEU, `tokenize="none"`, as `decode_worker.py` scores test2016)
    of the output `ids` (N, T) against the prepared references; None for a file `prepare`
    wrote without them."""
    if "test_references" not in info:
        return None
    import sacrebleu

    vocabulary, eos = info["target_vocabulary"], info["eos_id"]
    texts = []
    for row in ids:
        words = []
        for i in row:
            if i == eos or i == 0:
                break
            words.append(vocabulary[i])
        texts.append(" ".join(words))
    references = info["test_references"][:len(texts)]
    return round(sacrebleu.corpus_bleu(texts, [references], tokenize="none").score, 2)


def beam_search_fn(model, info, max_steps, beam_size):
    """The compiled `(model, source, max_length) -> (tokens, scores)` of beam search, over
    the step with the model's `search_constants()` of its trained weights, as `Translator`
    searches."""
    import functools

    from keras import ops

    from keras_rnmt.search import beam_search
    from keras_rnmt.search.cast_once import cast_weights_once
    from keras_rnmt.search.compiled import compile_search

    def run(source, max_length, constants):
        step = functools.partial(model.search_step, constants=constants)
        with cast_weights_once(model):
            state = model.search_state(source, max_length=max_steps)
            result = beam_search(step, state, batch_size=ops.shape(source)[0],
                                 beam_size=beam_size, bos_id=info["bos_id"],
                                 eos_id=info["eos_id"], max_length=max_length,
                                 length_penalty=1.0, source_mask=ops.not_equal(source, 0),
                                 max_steps=max_steps, keep_attention=False)
        return result.tokens, result.scores

    compiled, constants = compile_search(run), model.search_constants()
    return lambda model, source, max_length: compiled(model, source, max_length, constants)


def check(data, info, attention, policy, args):
    """Train and search one (attention, policy); returns the result dict."""
    import keras
    from train_worker import compiled_model

    from keras_rnmt.training.config import TrainConfig

    changes = {"attention": attention, **({"window": 5} if attention == "recurrent" else {}),
               **args.changes}
    config = TrainConfig.from_dict(info["config"]).override(changes)
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(policy)
    try:
        _, model = compiled_model(config, info["source_vocab_size"], info["target_vocab_size"])
    finally:
        keras.config.set_dtype_policy("float32")
    batches = [tuple(data[f"{name}_{i}"] for name in ("source", "target_in", "target_out"))
               for i in range(info["batches"])]
    firsts = {}
    for batch in batches:
        firsts.setdefault((batch[0].shape, batch[1].shape), batch)
    warmup, timed = batches[:args.warmup], batches[args.warmup:args.warmup + args.steps]
    compile_seconds, warmup_loss = fit_pass(model, list(firsts.values()) + warmup)
    seconds, loss = fit_pass(model, timed)
    tokens = int(sum((b[2] != 0).sum() for b in timed))
    result = dict(backend=keras.backend.backend(), device=device_name(), attention=attention,
                  window=config.model.window if attention == "recurrent" else None,
                  dtype_policy=model.dtype_policy.name, changes=args.changes,
                  parameters=int(model.count_params()), steps=len(timed),
                  train_seconds=round(seconds, 2),
                  target_tokens_per_second=round(tokens / seconds, 1),
                  padding_fraction=round(1 - tokens / sum(b[2].size for b in timed), 3),
                  train_compile_and_warmup_seconds=round(compile_seconds, 1), shapes=len(firsts),
                  warmup_loss=round(warmup_loss, 4), timed_loss=round(loss, 4),
                  loss_finite=bool(np.isfinite(warmup_loss) and np.isfinite(loss)),
                  loss_fell=bool(loss < warmup_loss))
    if hasattr(model.optimizer, "dynamic_scale"):
        result["loss_scale"] = float(keras.ops.convert_to_numpy(model.optimizer.dynamic_scale))
    if args.beam_size:
        test = data["test_source"][:args.sentences or None]
        max_steps = round_up(int(output_limits(test).max()))
        search = beam_search_fn(model, info, max_steps, args.beam_size)
        first, _ = beam_pass(search, model, test, args.batch_size)
        rates = []
        for _ in range(args.beam_passes):
            seconds, ids = beam_pass(search, model, test, args.batch_size)
            rates.append(round(len(test) / seconds, 1))
        result.update(beam_size=args.beam_size, sentences=len(test),
                      beam_first_pass_seconds=round(first, 1),
                      beam_sentences_per_second=float(np.median(rates)),
                      beam_passes_sentences_per_second=rates,
                      beam_mean_output_tokens=round(float((ids != 0).sum(1).mean()), 1),
                      tokenised_bleu=tokenised_bleu(ids, info))
    return result


def run(args):
    import keras

    from keras_rnmt.precision import accelerator_present

    if not (accelerator_present() or args.allow_cpu):
        raise SystemExit(f"no GPU visible to the {keras.backend.backend()} backend "
                         "(pass --allow-cpu to run the check on the CPU anyway)")
    data = np.load(args.batches)
    info = json.loads(str(data["info"]))
    for attention in args.attentions:
        for policy in args.policies:
            result = check(data, info, attention, policy, args)
            line = "RESULT " + json.dumps(result)
            print(line, flush=True)
            if args.out:
                with open(args.out, "a", encoding="utf-8") as f:
                    f.write(json.dumps(result) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    make = commands.add_parser("prepare", help="write SB batches and test2016 ids (.npz)")
    make.add_argument("path")
    make.add_argument("--batches", type=int, default=260)
    make.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                      help="SB config changes, e.g. seed=1 decoder_units=256")
    check_parser = commands.add_parser("run", help="train and search on the GPU")
    check_parser.add_argument("batches", help="the .npz `prepare` wrote")
    check_parser.add_argument("--attentions", nargs="+", default=["bahdanau", "recurrent"],
                              choices=["bahdanau", "recurrent"])
    check_parser.add_argument("--policies", nargs="+",
                              default=["float32", "mixed_float16", "mixed_bfloat16"],
                              choices=["float32", "mixed_float16", "mixed_bfloat16"])
    check_parser.add_argument("--warmup", type=int, default=40, help="untimed steps")
    check_parser.add_argument("--steps", type=int, default=200, help="timed steps")
    check_parser.add_argument("--beam-size", type=int, default=5, help="0: no search")
    check_parser.add_argument("--batch-size", type=int, default=64, help="search batch")
    check_parser.add_argument("--beam-passes", type=int, default=3,
                              help="timed search passes after the compiling one (the median "
                                   "is reported)")
    check_parser.add_argument("--sentences", type=int, default=0,
                              help="search only the first N test2016 sentences (0 = all)")
    check_parser.add_argument("--out", default="", help="also append the results (JSON lines)")
    check_parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                              help="config changes for the trained models, e.g. "
                                   "jit_compile=true (torch.compile under PyTorch)")
    check_parser.add_argument("--allow-cpu", action="store_true")
    args = parser.parse_args(argv)
    args.changes = dict(item.split("=", 1) for item in args.set)
    if args.command == "prepare":
        prepare(args.path, args.batches, dict(item.split("=", 1) for item in args.set))
    else:
        run(args)


if __name__ == "__main__":
    main()
