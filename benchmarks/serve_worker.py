"""Time an exported SavedModel with plain TensorFlow (keras_rnmt is never imported).

    python benchmarks/serve_worker.py saved_models/bench_epoch1 DATA_DIR [--sentences N]

Batch throughput: test2016 in file order, 64 raw strings per call, one untimed pass first
(tracing), then a timed pass; then a timed pass in batches of similar length, as a client
that sorts its requests would send them (what `Translator` does; the outputs must be those of
the file-order pass). Latency: the first 200 sentences one per call (after 10
warm-up calls), median and 95th percentile. Prints one `RESULT {json}` line. `--sentences N`
uses only the first N sentences of test2016 (a smoke test).
"""

import argparse
import json
import os
import sys
import time


def main(path, data, limit=0):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    assert "keras_rnmt" not in sys.modules
    serve = tf.saved_model.load(path).signatures["serving_default"]
    with open(os.path.join(data, "test_2016_flickr.lc.norm.tok.en"), encoding="utf-8") as f:
        sources = f.read().splitlines()
    if limit:
        sources = sources[:limit]

    def run_batches(order=None):
        outputs = [None] * len(sources)
        order = list(range(len(sources)) if order is None else order)
        for i in range(0, len(order), 64):
            rows = order[i:i + 64]
            result = serve(inputs=tf.constant([sources[row] for row in rows]))
            for row, text in zip(rows, result["translations"].numpy(), strict=True):
                outputs[row] = text.decode("utf-8")
        return outputs

    start = time.perf_counter()
    run_batches()
    first = time.perf_counter() - start
    start = time.perf_counter()
    outputs = run_batches()
    seconds = time.perf_counter() - start
    by_length = sorted(range(len(sources)), key=lambda row: len(sources[row].split()))
    run_batches(by_length)  # traces the shapes that sorted batches bring
    start = time.perf_counter()
    sorted_outputs = run_batches(by_length)
    sorted_seconds = time.perf_counter() - start
    for sentence in sources[:10]:
        serve(inputs=tf.constant([sentence]))
    latencies = []
    for sentence in sources[:200]:
        start = time.perf_counter()
        serve(inputs=tf.constant([sentence]))["translations"].numpy()
        latencies.append(time.perf_counter() - start)
    result = {
        "sentences": len(sources),
        "seconds": round(seconds, 2),
        "sentences_per_second": round(len(sources) / seconds, 1),
        "first_pass_seconds": round(first, 1),
        "length_sorted_sentences_per_second": round(len(sources) / sorted_seconds, 1),
        "length_sorted_outputs_equal": sorted_outputs == outputs,
        "latency_ms_p50": round(1000 * float(np.percentile(latencies, 50)), 1),
        "latency_ms_p95": round(1000 * float(np.percentile(latencies, 95)), 1),
        "keras_rnmt_imported": "keras_rnmt" in sys.modules,
        "outputs_sample": outputs[:3],
    }
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the SavedModel folder")
    parser.add_argument("data", help="the Multi30k folder")
    parser.add_argument("--sentences", type=int, default=0,
                        help="only the first N test2016 sentences (0 = all)")
    args = parser.parse_args()
    main(args.path, args.data, args.sentences)
