"""The `keras-rnmt` command: train, translate, evaluate, average, export, plot, quickstart.

    keras-rnmt train recipes/multi30k.py --attention recurrent --window 5 --run-dir runs/rec5
    keras-rnmt translate runs/rec5 -i input.txt -o output.txt --beam-size 5
    keras-rnmt evaluate runs/rec5 --source test.en --reference test.de --tokenized
    keras-rnmt average runs/rec5 --last 3   # needs training with --keep-checkpoints 3
    keras-rnmt evaluate runs/rec5 --model-file averaged.keras --source ... --reference ...
    keras-rnmt export runs/rec5 saved_models/rec5
    keras-rnmt plot runs/rec5 "a man is riding a bike ." -o bike.png --beam-size 5
    keras-rnmt plot runs/rec5 --curves
    keras-rnmt quickstart

Bad input (a missing file, invalid UTF-8, an unknown config key or attention name) stops the
command with one line, `keras-rnmt COMMAND: error: ...`, and exit status 1; `--traceback`
shows the full Python trace instead.
"""

import argparse
import codecs
import contextlib
import importlib.util
import os
import sys

from keras_rnmt.compilation_cache import use_compilation_cache
from keras_rnmt.malloc import keep_freed_memory_for_backend

# keras_rnmt.search.STOP_RULES, spelled out so `--help` does not import Keras.
STOP_RULES_CHOICES = ("current", "bound")
# keras_rnmt.training.config.POLICIES, spelled out so `--help` needs no heavy import.
DTYPE_POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# keras_rnmt.matmul_precision.MATMUL_PRECISIONS, likewise.
MATMUL_PRECISIONS = ("float32", "bfloat16")
# What bad input raises: our own messages (file and line, or the valid choices) are ValueErrors,
# and a missing file is an OSError. Anything else is a bug and keeps its traceback.
USER_ERRORS = (ValueError, OSError)


def load_recipe(path):
    """Import a recipe file and return its module (it defines `config()`)."""
    if not os.path.exists(path):
        raise FileNotFoundError(f"No recipe at {path}")
    spec = importlib.util.spec_from_file_location("keras_rnmt_recipe", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    if not hasattr(module, "config"):
        raise ValueError(f"Recipe {path} must define `config()` returning a TrainConfig")
    return module


def parse_overrides(items):
    """`["--attention", "recurrent", "--window=5"]` -> {"attention": "recurrent", "window": "5"}."""
    overrides, i = {}, 0
    while i < len(items):
        item = items[i]
        if not item.startswith("--"):
            raise ValueError(f"Expected --key value, received {item!r}")
        if "=" in item:
            key, value = item[2:].split("=", 1)
            i += 1
        else:
            if i + 1 >= len(items):
                raise ValueError(f"Missing a value for {item}")
            key, value = item[2:], items[i + 1]
            i += 2
        overrides[key] = value
    return overrides


def cmd_train(args, extra):
    from keras_rnmt.training.config import TrainConfig
    from keras_rnmt.training.train import train_and_evaluate

    recipe = load_recipe(args.recipe)
    config = recipe.config()
    if not isinstance(config, TrainConfig):
        raise ValueError(f"Recipe {args.recipe}: config() must return a TrainConfig; it "
                         f"returned {type(config).__name__}")
    config = config.override(parse_overrides(extra))
    run_dir = args.run_dir or os.path.join(
        "runs", os.path.splitext(os.path.basename(args.recipe))[0] + "_" + config.model.attention
    )
    print(f"run directory: {run_dir}")
    train_and_evaluate(config, run_dir)


def _read_input(path):
    from keras_rnmt.data import read_lines

    if path in (None, "-"):
        # A byte-order mark before the first line (PowerShell pipes write one) is not text.
        data = sys.stdin.buffer.read().removeprefix(codecs.BOM_UTF8)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as error:
            line = data[:error.start].count(b"\n") + 1
            raise ValueError(f"<stdin>:{line}: invalid UTF-8") from None
        lines = text.split("\n")
        lines = lines[:-1] if lines and lines[-1] == "" else lines
        # As `read_lines`: a line ends at "\n" or "\r\n", and nothing else splits it.
        return [line[:-1] if line.endswith("\r") else line for line in lines]
    return read_lines(path)


def _report_progress(done, total):
    """`translated D/N lines` on stderr, rewritten in place: stdout may be the translations."""
    end = "\n" if done >= total else ""
    print(f"\rtranslated {done}/{total} lines", end=end, file=sys.stderr, flush=True)


def cmd_translate(args, _):
    from keras_rnmt.matmul_precision import set_matmul_precision
    from keras_rnmt.translator import Translator
    from keras_rnmt.unk import load_dictionary

    if args.n_best > 1 and not args.n_best_output:
        raise ValueError(f"--n-best {args.n_best} needs --n-best-output FILE for the lists: the "
                         "output holds one translation per input line")
    set_matmul_precision(args.matmul_precision)  # a ValueError outside JAX
    translator = Translator.from_run(
        args.run_dir, beam_size=args.beam_size, batch_size=args.batch_size,
        replace_unk=args.replace_unk or bool(args.unk_dictionary),
        unk_dictionary=load_dictionary(args.unk_dictionary) if args.unk_dictionary else None,
        **_search_options(args),
    )
    lines = _read_input(args.input)
    with contextlib.ExitStack() as files:
        # Opened before the search (after the input is read: an output may replace it), so
        # a path that cannot be written fails at once, not after the whole file's translation.
        def output(path):
            return files.enter_context(open(path, "w", encoding="utf-8"))

        out = output(args.output) if args.output not in (None, "-") else sys.stdout
        n_best_out = output(args.n_best_output) if args.n_best_output else None
        alignments_out = output(args.alignments) if args.alignments else None
        results = []
        for start in range(0, len(lines), args.batch_size * 4):
            chunk = lines[start:start + args.batch_size * 4]
            results.extend(translator.translate(chunk, n_best=args.n_best))
            _report_progress(len(results), len(lines))
        for result in results:
            out.write(result.text + "\n")
        if n_best_out:
            for index, result in enumerate(results):
                for hypothesis in result.n_best or [result]:
                    n_best_out.write(f"{index}\t{hypothesis.score:.4f}\t{hypothesis.text}\n")
        if alignments_out:
            for result in results:
                pairs = []
                if result.attention is not None:
                    for j in range(len(result.tokens)):
                        i = int(result.attention[j, :-1].argmax()) if result.attention.shape[1] > 1 else 0
                        pairs.append(f"{i}-{j}")
                alignments_out.write(" ".join(pairs) + "\n")


def _search_options(args):
    """`Translator.from_run` keyword arguments of the options `_add_search_options` adds;
    a length penalty left unset keeps the run's own (its config's `length_penalty`), and
    unset output limits keep `Translator`'s."""
    options = {"model_file": args.model_file, "stop_rule": args.stop_rule,
               "dtype_policy": args.dtype_policy, "jit_compile": args.jit_compile}
    for name in ("length_penalty", "max_length_a", "max_length_b"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    return options


def cmd_evaluate(args, _):
    from keras_rnmt.data import read_parallel
    from keras_rnmt.evaluation import corpus_perplexity, corpus_scores
    from keras_rnmt.matmul_precision import set_matmul_precision
    from keras_rnmt.translator import Translator

    set_matmul_precision(args.matmul_precision)  # a ValueError outside JAX
    translator = Translator.from_run(args.run_dir, beam_size=args.beam_size,
                                     replace_unk=args.replace_unk, **_search_options(args))
    sources, references = read_parallel(args.source, args.reference)
    if not sources:
        raise ValueError(f"{args.source} and {args.reference} hold no lines: nothing to evaluate")
    # Opened before the search, as translate's outputs: a bad path fails at once.
    output_file = (open(args.output, "w", encoding="utf-8") if args.output
                   else contextlib.nullcontext())
    with output_file as output:
        hypotheses = translator(sources)
        if output:
            output.writelines(hypothesis + "\n" for hypothesis in hypotheses)
    scores = corpus_scores(hypotheses, references, tokenized=args.tokenized,
                           lowercase=args.lowercase)
    scores.perplexity = corpus_perplexity(translator.model, sources, references,
                                          translator.source_tokenizer,
                                          translator.target_tokenizer)
    print(scores)
    return scores


def cmd_average(args, _):
    from keras_rnmt.training.checkpoints import average_checkpoints

    path, epochs = average_checkpoints(args.run_dir, last=args.last, epochs=args.epochs,
                                       output=args.output)
    print(f"averaged epochs {epochs} -> {path}")
    return path


def cmd_export(args, _):
    import keras

    from keras_rnmt.export import export_run

    # Unset options keep the run's own (its config's beam size and length penalty).
    options = {"stop_rule": args.stop_rule}
    if args.beam_size is not None:
        options["beam_size"] = args.beam_size
    for name in ("length_penalty", "max_length_a", "max_length_b", "max_output_length"):
        if getattr(args, name) is not None:
            options[name] = getattr(args, name)
    export_run(args.run_dir, args.path, model_file=args.model_file,
               dtype_policy=args.dtype_policy or None, **options)
    if keras.backend.backend() == "tensorflow":  # else the export process said it
        print(f"SavedModel written to {args.path}")


def cmd_plot(args, _):
    """Write the attention heatmap of one sentence (and, for recurrent attention, the
    memory-norm panel to `*_memory.png`), or with `--curves` the training curves."""
    import matplotlib.pyplot as plt
    from keras import ops

    from keras_rnmt import plotting

    if args.curves:
        path = args.output or os.path.join(args.run_dir, "curves.png")
        plt.close(plotting.plot_training_curves(os.path.join(args.run_dir, "log.csv"), path))
        print(path)
        return [path]
    if not args.sentence:
        raise ValueError("give a sentence to translate, or --curves")
    from keras_rnmt.attention import memory_norms
    from keras_rnmt.translator import Translator

    translator = Translator.from_run(args.run_dir, beam_size=args.beam_size)
    result = translator.translate([args.sentence])[0]
    if result.attention is None:
        raise ValueError(f"the model in {args.run_dir} has no attention weights to plot")
    path = args.output or os.path.join(args.run_dir, "attention.png")
    targets = (result.tokens + ["</s>"])[:len(result.attention)]
    plt.close(plotting.plot_attention(result.attention, result.source_tokens, targets,
                                      path=path, title=result.text))
    print(path)
    paths = [path]
    config = getattr(translator.model, "config", None)
    if getattr(config, "model_type", None) == "rnn" and config.attention == "recurrent":
        paths.append(os.path.splitext(path)[0] + "_memory.png")
        states = translator.attention_states(args.sentence, result)
        norms = ops.convert_to_numpy(memory_norms(states))
        plt.close(plotting.plot_memory_norms(norms, result.source_tokens, targets,
                                             path=paths[-1], title="memory norms ||d_ij||"))
        print(paths[-1])
    return paths


def cmd_quickstart(args, _):
    from keras_rnmt.quickstart import main as quickstart

    quickstart(run_dir=args.run_dir)


def _epoch_list(text):
    """`"10,11,12"` -> `[10, 11, 12]` (argparse type)."""
    try:
        return [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated epoch numbers such as 10,11,12; received {text!r}"
        ) from None


def _add_output_limit_options(parser):
    """`--max-length-a/-b`, the per-sentence output limit `translate`, `evaluate` and
    `export` share (as fairseq's `--max-len-a/b`)."""
    parser.add_argument("--max-length-a", type=float, default=None,
                        help="an output stops at A * source tokens (with </s>) + B tokens "
                             "(default A = 1.5)")
    parser.add_argument("--max-length-b", type=float, default=None,
                        help="see --max-length-a (default B = 10)")


def _add_search_options(parser):
    """The model file and search options `translate` and `evaluate` share."""
    parser.add_argument("--model-file", default="best.keras",
                        help="the run's model to load (e.g. averaged.keras; default best.keras)")
    parser.add_argument("--beam-size", type=int, default=5)
    parser.add_argument("--length-penalty", type=float, default=None,
                        help="GNMT length penalty alpha (default: the run's, usually 1.0)")
    parser.add_argument("--stop-rule", choices=STOP_RULES_CHOICES, default="current",
                        help="beam search stops a sentence when its best hypothesis has ended "
                             "(current) or when no continuation can beat it (bound, exact)")
    _add_output_limit_options(parser)
    parser.add_argument("--dtype-policy", default=None, choices=DTYPE_POLICIES,
                        help="compute the search in this Keras dtype policy (mixed_bfloat16: "
                             "faster on CPUs with AVX-512 BF16 under TensorFlow and PyTorch)")
    parser.add_argument("--jit-compile", action="store_true",
                        help="TensorFlow: compile the search with XLA (faster once compiled, "
                             "slower to compile; for large files)")
    parser.add_argument("--matmul-precision", default="float32", choices=MATMUL_PRECISIONS,
                        help="JAX: bfloat16 = the decoder's products from bfloat16 operands "
                             "with float32 sums (faster on CPUs with AMX)")


def build_parser():
    parser = argparse.ArgumentParser(prog="keras-rnmt", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--traceback", action="store_true",
                        help="on bad input, show the full Python traceback instead of one line")
    sub = parser.add_subparsers(dest="command", required=True)

    def add_parser(name, **kwargs):
        return sub.add_parser(name, parents=[common], **kwargs)

    train = add_parser("train", help="train from a recipe; any config field as --key value")
    train.add_argument("recipe")
    train.add_argument("--run-dir", default=None)
    train.set_defaults(func=cmd_train)

    translate = add_parser("translate", help="translate a file or stdin, one line per line")
    translate.add_argument("run_dir")
    translate.add_argument("-i", "--input", default=None, help="input file (default stdin)")
    translate.add_argument("-o", "--output", default=None, help="output file (default stdout)")
    _add_search_options(translate)
    translate.add_argument("--batch-size", type=int, default=64)
    translate.add_argument("--n-best", type=int, default=1,
                           help="hypotheses per input in --n-best-output (at most the beam size)")
    translate.add_argument("--n-best-output", default=None,
                           help="file of 'index\\tscore\\ttext' lines, --n-best per input, best first")
    translate.add_argument("--alignments", default=None, help="file for i-j alignment pairs")
    translate.add_argument("--replace-unk", action="store_true")
    translate.add_argument("--unk-dictionary", default=None)
    translate.set_defaults(func=cmd_translate)

    evaluate = add_parser("evaluate", help="sacreBLEU and chrF of a run on a test set")
    evaluate.add_argument("run_dir")
    evaluate.add_argument("--source", required=True)
    evaluate.add_argument("--reference", required=True)
    _add_search_options(evaluate)
    evaluate.add_argument("--tokenized", action="store_true",
                          help="references are tokenised (lc.norm.tok): BLEU tokenize='none'")
    evaluate.add_argument("--lowercase", action="store_true")
    evaluate.add_argument("--replace-unk", action="store_true")
    evaluate.add_argument("-o", "--output", default=None,
                          help="also write the translations scored, one per source line")
    evaluate.set_defaults(func=cmd_evaluate)

    average = add_parser("average", help="average a run's last epoch checkpoints into one "
                                         "model (train with --keep-checkpoints N)")
    average.add_argument("run_dir")
    average.add_argument("--last", type=int, default=None,
                         help="average the newest N epoch checkpoints")
    average.add_argument("--epochs", type=_epoch_list, default=None,
                         help="or these 1-based epochs, comma-separated (e.g. 10,11,12)")
    average.add_argument("-o", "--output", default="averaged.keras",
                         help="file name in RUN_DIR, or a path (default averaged.keras)")
    average.set_defaults(func=cmd_average)

    export = add_parser("export", help="export a run as a SavedModel serving raw strings")
    export.add_argument("run_dir")
    export.add_argument("path")
    export.add_argument("--model-file", default="best.keras",
                        help="the run's model to export (e.g. averaged.keras)")
    export.add_argument("--beam-size", type=int, default=None)
    export.add_argument("--length-penalty", type=float, default=None,
                        help="GNMT length penalty alpha (default: the run's)")
    export.add_argument("--stop-rule", choices=STOP_RULES_CHOICES, default="current",
                        help="beam search's stop rule in the graph (see translate --help)")
    _add_output_limit_options(export)
    export.add_argument("--max-output-length", type=int, default=None,
                        help="the longest output the graph can produce, </s> included; "
                             "longer limits are clipped to it (default 512; the graph holds "
                             "one search per bucket of 16, 64, 256 steps and this bound, so a "
                             "smaller one exports faster)")
    export.add_argument("--dtype-policy", default=None, choices=DTYPE_POLICIES,
                        help="the Keras dtype policy the graph computes in (mixed_bfloat16: "
                             "weights stay float32, cast once per call; on AVX-512 BF16 CPUs "
                             "faster for batches and single sentences)")
    export.set_defaults(func=cmd_export)

    plot = add_parser("plot", help="attention heatmap of a sentence, or training curves")
    plot.add_argument("run_dir")
    plot.add_argument("sentence", nargs="?", default=None, help="the source sentence")
    plot.add_argument("-o", "--output", default=None,
                      help="PNG path (default RUN_DIR/attention.png or RUN_DIR/curves.png); "
                           "recurrent attention also writes the memory norms to *_memory.png")
    plot.add_argument("--beam-size", type=int, default=5)
    plot.add_argument("--curves", action="store_true",
                      help="plot loss, val_loss and val_bleu per epoch from RUN_DIR/log.csv")
    plot.set_defaults(func=cmd_plot)

    quick = add_parser("quickstart", help="train and evaluate the toy recurrent model")
    quick.add_argument("--run-dir", default="runs/quickstart")
    quick.set_defaults(func=cmd_quickstart)
    return parser


def main(argv=None):
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra and args.command != "train":
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    keep_freed_memory_for_backend()
    use_compilation_cache()
    try:
        args.func(args, extra)
    except USER_ERRORS as error:
        if args.traceback:
            raise
        parser.exit(1, f"keras-rnmt {args.command}: error: {error}\n")


if __name__ == "__main__":
    main()
