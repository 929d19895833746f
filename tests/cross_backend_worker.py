"""Greedy and beam-4 search of saved models under one backend; run by test_cross_backend.py.

    KERAS_BACKEND=jax python tests/cross_backend_worker.py request.json

The request holds `{"models": {name: path to .keras}, "source": [[ids...], ...],
"max_length": int}`; prints one JSON line `{name: {"greedy": {...}, "beam": {...}}}` with
token ids, scores and log-probabilities as lists.
"""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from keras import ops  # noqa: E402

import keras_rnmt.models  # noqa: E402,F401  (registers the serialisable classes)
from keras_rnmt.search import beam_search, greedy_search  # noqa: E402
from keras_rnmt.search.compiled import compile_search  # noqa: E402


def search(model, source, max_length):
    """Greedy and beam-4 (2-best, length penalty 1) search: jitted under JAX as `Translator`
    does (one compile instead of one per eager op), eager elsewhere (faster to start)."""

    def run(source, limit):
        common = dict(batch_size=source.shape[0], bos_id=2, eos_id=3, max_length=limit,
                      source_mask=ops.not_equal(source, 0), max_steps=max_length)
        greedy = greedy_search(model.search_step, model.search_state(source), **common)
        beam = beam_search(model.search_step, model.search_state(source), beam_size=4,
                           length_penalty=1.0, n_best=2, **common)
        return [(r.tokens, r.scores, r.log_probs) for r in (greedy, beam)]

    limit = np.full((source.shape[0],), max_length, dtype="int32")
    if keras.backend.backend() == "jax":
        results = compile_search(run)(model, source, limit)
    else:
        results = run(ops.convert_to_tensor(source), ops.convert_to_tensor(limit))
    return {mode: {key: ops.convert_to_numpy(value).tolist()
                   for key, value in zip(("tokens", "scores", "log_probs"), result)}
            for mode, result in zip(("greedy", "beam"), results)}


def searches(request):
    """The report for `request` (a dict) under this process's backend."""
    source = np.array(request["source"], dtype="int32")
    report = {"backend": keras.backend.backend()}
    for name, path in request["models"].items():
        report[name] = search(keras.saving.load_model(path), source, request["max_length"])
    return report


def main(request_path):
    with open(request_path) as f:
        print(json.dumps(searches(json.load(f))))


if __name__ == "__main__":
    main(sys.argv[1])
