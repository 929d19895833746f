"""Where one SB training step spends its time under JAX: an XLA profile, by model part.

    KERAS_BACKEND=jax python benchmarks/profile_step.py --length 14 --steps 10 --top 25
    KERAS_BACKEND=jax python benchmarks/profile_step.py --length 4 --steps 1 --warmup 1 \
        --set embedding_dim=8 encoder_units=8 decoder_units=16 max_vocabulary=200  # smoke

Builds SB (`--set` changes it), runs `--warmup` steps on synthetic batches whose sources
and targets all have `--length` tokens (one compiled shape), then `--steps` more under
`jax.profiler.trace`. XLA's CPU runtime records one event per executed thunk (a fusion, a
matmul, a loop); each is matched by name to the optimised HLO dumped at compile time, whose
`op_name` metadata tells the model part (encoder, the decoder's loop, the vocabulary
projection and loss, Adam) and the direction (`transpose(jvp(...))` is the backward pass).
Prints the untraced step time and its minor page faults (glibc maps a block over 32 MiB
afresh and unmaps it when freed, so a step's temporaries can fault in anew every step:
RESULTS.md §1, "Page faults of a step's temporaries"; the script keeps them on the main heap
as `keras-rnmt train` does, `keras_rnmt.malloc.keep_freed_memory_for_backend`, unless
`KEEP_FREED_MEMORY=0`), then milliseconds per step by part
and the `--top` thunks. Thunks of the two worker threads can overlap, so their sum is at or
above the step's wall time. This is a diagnosis tool for §1 of RESULTS.md, not a throughput
figure (the trace slows the step).
"""

import argparse
import collections
import glob
import gzip
import json
import os
import re
import resource
import sys
import tempfile
import time

PARTS = (  # (part, pattern in op_name), first match wins
    ("vocabulary projection + loss", r"output_projection|compile_loss"),
    # The JAX training unroll runs its scan inside `jax.vjp` (models/deferred_scan.py), so
    # the loop's names read ".../jvp(decoder)/jvp()/while" and ".../transpose(jvp())/while".
    ("decoder loop", r"\(decoder\)\)?/(?:(?:transpose\()?jvp\(\)\)?/)?while"),
    ("decoder, outside the loop", r"\(decoder\)"),
    ("encoder", r"\(encoder\)"),
    ("optimizer", r"adam|/sgd|clip"),
)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=14,
                        help="tokens per source and target sentence (SB's mean is about 13)")
    parser.add_argument("--steps", type=int, default=10, help="profiled training steps")
    parser.add_argument("--warmup", type=int, default=10, help="untimed steps before")
    parser.add_argument("--top", type=int, default=25, help="thunks listed")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="SB overrides, e.g. attention=recurrent window=5")
    return parser.parse_args(argv)


def hlo_ops(dump_dir):
    """{instruction name: [result shape, op_name, is a matmul]} from the train step's
    optimised HLO (a fusion counts as a matmul if its computation holds a `dot`)."""
    paths = sorted(glob.glob(os.path.join(
        dump_dir, "*jit_train_step*.cpu_after_optimizations.txt")))
    if not paths:
        raise SystemExit(f"no optimised train-step HLO in {dump_dir}: is KERAS_BACKEND=jax?")
    ops, calls, computation, with_dot = {}, {}, "", set()
    pattern = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\S+) ")
    with open(paths[-1]) as f:
        lines = f.readlines()
    for line in lines:
        if line.startswith("%") or line.startswith("ENTRY"):
            computation = line.split()[1 if line.startswith("ENTRY") else 0].lstrip("%")
        match = pattern.match(line)
        if not match:
            continue
        is_dot = " dot(" in line
        if is_dot:
            with_dot.add(computation)
        called = re.search(r"calls=%([\w.\-]+)", line)
        if called:
            calls[match.group(1)] = called.group(1)
        op_name = re.search(r'op_name="([^"]*)"', line)
        ops.setdefault(match.group(1), [match.group(2), op_name.group(1) if op_name else "",
                                        is_dot])
    for name, called in calls.items():
        ops[name][2] = ops[name][2] or called in with_dot
    return ops


def part_of(op_name):
    """`(part, direction)` of an HLO instruction from its `op_name` metadata."""
    if not op_name:
        return "unattributed", ""
    direction = "backward" if "transpose(jvp(" in op_name else "forward"
    for part, pattern in PARTS:
        if re.search(pattern, op_name):
            return part, direction
    return "other", direction


def thunk_times(trace_dir, ops):
    """{thunk name: (total microseconds, count)} of the trace's events that are HLO ops."""
    paths = glob.glob(os.path.join(trace_dir, "**", "*.json.gz"), recursive=True)
    if not paths:
        raise SystemExit(f"no perfetto trace in {trace_dir}")
    with gzip.open(paths[0]) as f:
        events = json.load(f)
    events = events["traceEvents"] if isinstance(events, dict) else events
    times = collections.defaultdict(lambda: [0.0, 0])
    for event in events:
        if event.get("ph") == "X" and event.get("name") in ops:
            times[event["name"]][0] += event.get("dur", 0)
            times[event["name"]][1] += 1
    return times


def main(argv=None):
    args = parse_args(argv)
    work = tempfile.mkdtemp(prefix="profile_step-")
    dump_dir, trace_dir = os.path.join(work, "hlo"), os.path.join(work, "trace")
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + f" --xla_dump_to={dump_dir}"
                               " --xla_dump_hlo_as_text --xla_dump_hlo_pass_re=^$").strip()
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import jax
    import keras
    import numpy as np
    from sb import sb_config, training_flops
    from train_worker import compiled_model, fit_batches, synthetic_batches

    from keras_rnmt.malloc import keep_freed_memory_for_backend
    from keras_rnmt.matmul_precision import set_matmul_precision
    from keras_rnmt.training.train import prepare_data

    if keras.backend.backend() != "jax":
        raise SystemExit(f"profile_step.py profiles XLA under JAX; KERAS_BACKEND is "
                         f"{keras.backend.backend()!r}")
    # As `keras-rnmt train` does: the step runs on this thread, its temporaries on the main
    # heap (keras_rnmt/malloc.py). KEEP_FREED_MEMORY=0 profiles JAX's default instead.
    if os.environ.get("KEEP_FREED_MEMORY", "1") != "0":
        keep_freed_memory_for_backend()
    config = sb_config(**dict(item.split("=", 1) for item in args.set))
    keras.utils.set_random_seed(config.seed)
    keras.config.set_dtype_policy(config.dtype_policy)
    set_matmul_precision(config.matmul_precision)
    _, source_tokenizer, target_tokenizer = prepare_data(config, None)
    batches = synthetic_batches(args.warmup + 2 * args.steps, config.batch_size, args.length,
                                source_tokenizer.vocabulary_size(),
                                target_tokenizer.vocabulary_size(), config.seed)
    model_config, model = compiled_model(config, source_tokenizer.vocabulary_size(),
                                         target_tokenizer.vocabulary_size())
    fit_batches(model, batches[:args.warmup])
    faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    start = time.perf_counter()
    fit_batches(model, batches[args.warmup:args.warmup + args.steps])
    seconds = (time.perf_counter() - start) / args.steps
    faults = (resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults) / args.steps
    tokens = config.batch_size * args.length
    lengths = np.full(config.batch_size, args.length)
    flops = training_flops(model_config, lengths, lengths)
    print(f"untraced: {seconds * 1e3:.0f} ms per step of {tokens} target tokens "
          f"({tokens / seconds:,.0f} tokens/s, {flops / seconds / 1e9:.0f} GFLOP/s), "
          f"{faults:,.0f} minor page faults a step")
    with jax.profiler.trace(trace_dir, create_perfetto_trace=True):
        fit_batches(model, batches[args.warmup + args.steps:])

    ops = hlo_ops(dump_dir)
    times = thunk_times(trace_dir, ops)
    per_step = {name: (total / 1e3 / args.steps, count // args.steps)
                for name, (total, count) in times.items()}
    by_part, by_kind = collections.Counter(), collections.Counter()
    for name, (ms, _) in per_step.items():
        by_part[part_of(ops[name][1])] += ms
        by_kind["matmuls" if ops[name][2] else "everything else"] += ms
    total = sum(by_part.values())
    print(f"traced thunks: {total:.0f} ms per step: "
          + ", ".join(f"{kind} {ms:.0f} ({ms / total:.0%})" for kind, ms in by_kind.items()))
    print(f"{'part':32s} {'direction':9s} {'ms/step':>8s} {'share':>6s}")
    for (part, direction), ms in by_part.most_common():
        print(f"{part:32s} {direction:9s} {ms:8.1f} {ms / total:6.1%}")
    print(f"\n{'ms/step':>8s} {'calls':>5s}  {'thunk':26s} {'result':30s} op_name")
    for name, (ms, calls) in sorted(per_step.items(), key=lambda kv: -kv[1][0])[:args.top]:
        shape, op_name, _ = ops[name]
        print(f"{ms:8.2f} {calls:5d}  {name:26s} {shape[:30]:30s} {op_name[-80:]}")


if __name__ == "__main__":
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    main()
