"""Time one optimizer update over SB's weights: Keras' Adam against keras_rnmt's Adam.

    KERAS_BACKEND=torch python benchmarks/optimizer_update.py --rounds 5 --updates 20
    KERAS_BACKEND=torch python benchmarks/optimizer_update.py --rounds 1 --updates 1 \
        --vocab 200 200 --set embedding_dim=8 encoder_units=8 decoder_units=16  # smoke

The weights are SB's model's (`build_model` of the recipe's config with Multi30k's
vocabulary sizes, 5,893 and 7,859: 12.8M weights), the gradients random. Each round times
`--updates` calls of `optimizer.apply` for each variant in turn: Keras' Adam and keras_rnmt's,
each with SB's global-norm clipping (1.0) and without, and the global norm alone. Under
PyTorch keras_rnmt's Adam runs PyTorch's fused kernel (`keras_rnmt/training/adam.py`); under
TensorFlow and JAX it is Keras' Adam, run eagerly here where training compiles it, so only
the PyTorch figures say anything. Prints one `FIGURES` line: ms an update, each variant's
best round and every round's mean.
"""

import argparse
import time

from sb import exit_on_sigterm, report, sb_config


def sb_weights(source_vocab_size, target_vocab_size, overrides=()):
    """SB's model's trainable weights (with config `overrides`), freshly initialised."""
    from keras_rnmt.models import build_model

    config = sb_config(**dict(item.split("=", 1) for item in overrides))
    model = build_model(config.model.replace(source_vocab_size=source_vocab_size,
                                             target_vocab_size=target_vocab_size))
    return model.trainable_variables


def variants():
    """name -> a function making a fresh optimizer (None: the norm alone)."""
    import keras

    from keras_rnmt.training.adam import Adam

    return {
        "keras_adam_clip": lambda: keras.optimizers.Adam(1e-3, global_clipnorm=1.0),
        "keras_rnmt_adam_clip": lambda: Adam(1e-3, global_clipnorm=1.0),
        "keras_adam": lambda: keras.optimizers.Adam(1e-3),
        "keras_rnmt_adam": lambda: Adam(1e-3),
        "global_norm_only": None,
    }


def time_variant(make, weights, grads, updates):
    """Seconds for `updates` updates (or global norms), after two untimed ones."""
    from keras import ops

    if make is None:
        def step():
            ops.convert_to_numpy(global_norm(grads))
    else:
        optimizer = make()
        optimizer.build(weights)

        def step():
            optimizer.apply(grads, weights)
            ops.convert_to_numpy(optimizer.iterations)  # waits for the update
    for _ in range(2):
        step()
    start = time.perf_counter()
    for _ in range(updates):
        step()
    return time.perf_counter() - start


def global_norm(grads):
    """‖g‖ over every gradient, as Keras' global-norm clipping computes it."""
    from keras import ops

    return ops.sqrt(sum(ops.sum(ops.square(g)) for g in grads))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--updates", type=int, default=20, help="timed updates a round")
    parser.add_argument("--vocab", type=int, nargs=2, default=[5893, 7859],
                        metavar=("SOURCE", "TARGET"), help="vocabulary sizes (SB's by default)")
    parser.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE",
                        help="SB config overrides (a smoke test: a tiny model)")
    parser.add_argument("--json", default="", help="also write the figures here")
    args = parser.parse_args(argv)

    import keras
    import numpy as np
    from keras import ops

    weights = sb_weights(*args.vocab, args.set)
    rng = np.random.default_rng(0)
    grads = [ops.convert_to_tensor(rng.standard_normal(w.shape).astype("float32") * 1e-3)
             for w in weights]
    rounds = {name: [] for name in variants()}
    for _ in range(args.rounds):
        for name, make in variants().items():
            seconds = time_variant(make, weights, grads, args.updates)
            rounds[name].append(round(1000 * seconds / args.updates, 2))
    figures = {"backend": keras.backend.backend(), "weights": int(sum(np.prod(w.shape) for w in weights)),
               "updates_per_round": args.updates, "ms_per_update": rounds,
               "best_ms": {name: min(ms) for name, ms in rounds.items()},
               "mean_ms": {name: round(sum(ms) / len(ms), 2) for name, ms in rounds.items()}}
    report(figures, args.json)


if __name__ == "__main__":
    exit_on_sigterm()
    main()
