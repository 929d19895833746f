"""The peer on a GPU: JoeyNMT 2.3.0 trains SB one epoch on CUDA, then beam-searches test2016.

The other side of `gpu_check.py`, run on the same GPU machine in the same call, so the two
compare side by side. JoeyNMT runs the SB yaml (`joeynmt_peer.py`: 460 updates of 64
sentences, beam 5, batch 64 at test time) with `use_cuda: True`, in float32 and, with
`--precisions fp16`, under its float16 autocast and loss scaling. It needs the Multi30k `lc.norm.tok` files under
`$KERAS_RNMT_DATA/multi30k` and the peer config beside that folder (`../peer/joeynmt_sb.yaml`),
and an interpreter that imports joeynmt with a CUDA build of PyTorch (default: this one):

    KERAS_RNMT_DATA=/path/to/data python benchmarks/gpu_joeynmt.py --precisions float32 fp16 --out gpu.jsonl

Prints one `RESULT {json}` line per precision: JoeyNMT's training "Tokens per Sec" (target
tokens, mean of its 50-step log windows after the first), and sentences/s of its closing
beam-5 decode of test2016 ("Generation took", 1,000 sentences) with the mean output length
in words (ours, in `gpu_check.py`, counts </s> too).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

TEST_SENTENCES = 1000


def check(work, fp16, python):
    """Train and decode JoeyNMT in `work`; returns the result dict."""
    from joeynmt_peer import mean_output_tokens, train_one_epoch
    from train_throughput import joeynmt_rate

    run = train_one_epoch(work, reuse=False, python=python, cuda=True, fp16=fp16)
    rate, windows = joeynmt_rate(run)
    seconds = run["test_decode_seconds"]
    return dict(peer="joeynmt 2.3.0", device=device_name(), fp16=fp16,
                parameters=run.get("parameters"), last_logged_update=run["train_windows"][-1][0],
                target_tokens_per_second=round(rate, 1), windows=windows,
                train_windows=run["train_windows"], wall_seconds=run["wall_seconds"],
                beam_size=5, sentences=TEST_SENTENCES, test_decode_seconds=seconds,
                beam_sentences_per_second=round(TEST_SENTENCES / seconds, 1),
                beam_mean_output_words=round(mean_output_tokens(work), 1),
                test_bleu=run.get("test_bleu"))


def device_name():
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("no GPU visible to PyTorch: JoeyNMT would train on the CPU")
    return torch.cuda.get_device_name()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", default="/tmp/joeynmt-gpu", help="JoeyNMT's data and model")
    parser.add_argument("--precisions", nargs="+", default=["float32"], choices=["float32", "fp16"],
                        help="one run each, in this order")
    parser.add_argument("--python", default=sys.executable,
                        help="an interpreter that imports joeynmt")
    parser.add_argument("--out", default="", help="also append the results (JSON lines)")
    args = parser.parse_args(argv)
    device_name()
    for precision in args.precisions:
        result = check(os.path.join(args.work, precision), precision == "fp16", args.python)
        print("RESULT " + json.dumps(result), flush=True)
        if args.out:
            with open(args.out, "a", encoding="utf-8") as f:
                f.write(json.dumps(result) + "\n")


if __name__ == "__main__":
    main()
