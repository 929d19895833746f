"""The search programs `Translator` compiles for a padded batch of source ids.

Greedy search is one program. Beam search is either two programs that Python alternates
(`beam_search_start`, then `beam_search_continue` chunk by chunk, for
`shrinking.shrinking_beam_search`), or one program that runs both inside
`graph_shrinking.graph_shrinking_beam_search` (TensorFlow without XLA). Each program casts a
mixed-precision model's weights once per call, not at every step (`cast_once`), and takes
the model's `search_constants()` (computed by the caller once for many calls) as its last
argument: None runs every product in the step.
"""

import functools

from keras import ops

from keras_rnmt.search.beam import beam_search_continue, beam_search_start
from keras_rnmt.search.cast_once import cast_weights_once
from keras_rnmt.search.graph_shrinking import graph_shrinking_beam_search
from keras_rnmt.search.greedy import greedy_search


def search_programs(model, bos_id, eos_id, max_steps, *, beam_size, n_best, length_penalty,
                    coverage_penalty, stop_rule, in_graph, keep_attention=True):
    """The functions to compile for one output length T = ``max_steps``.

    Args:
        model: a model with ``search_state(source, max_length)`` and ``search_step``.
        bos_id, eos_id: int, the target tokenizer's ids.
        max_steps: int, T, the static output length.
        beam_size, n_best, length_penalty, coverage_penalty, stop_rule: as `beam_search`.
        in_graph: bool. Beam search as one program (`graph_shrinking_beam_search`).
        keep_attention: bool. Beam search carries every hypothesis' attention history
            (B, K, T, S); without it the attention returned is None. The SavedModel, which
            serves only tokens, turns it off unless the coverage penalty needs it.
            Defaults to True.

    Returns:
        Greedy search (``beam_size <= 1``), or beam search when ``in_graph``:
        ``[run(source, max_length)]`` giving the n-best lists ``(tokens (B, N, T), scores
        (B, N), attention (B, N, T, S) or None)``, N = ``n_best`` (1 for greedy search).
        Else ``[start(source, max_length), advance(carry, until)]`` for
        `shrinking_beam_search`. ``source`` is int32 (B, S), 0-padded;
        ``max_length`` int32 (B,). Each program also takes ``constants=None``, the
        model's `search_constants()`.
    """
    options = dict(beam_size=beam_size, eos_id=eos_id, n_best=n_best,
                   coverage_penalty=coverage_penalty, length_penalty=length_penalty,
                   stop_rule=stop_rule)

    def common(source, max_length):
        return dict(batch_size=ops.shape(source)[0], bos_id=bos_id, max_length=max_length,
                    source_mask=ops.not_equal(source, 0), max_steps=max_steps)

    def step_fn(constants):
        if not constants:
            return model.search_step
        return functools.partial(model.search_step, constants=constants)

    def greedy(source, max_length, constants=None):
        with cast_weights_once(model):
            state = model.search_state(source, max_length=max_steps)
            result = greedy_search(step_fn(constants), state, eos_id=eos_id,
                                   **common(source, max_length))
        attention = None if result.attention is None else result.attention[:, None]
        return result.tokens[:, None], result.scores[:, None], attention  # a 1-best list

    def begin(source, max_length, constants):
        state = model.search_state(source, max_length=max_steps)
        return beam_search_start(step_fn(constants), state, keep_attention=keep_attention,
                                 **{**common(source, max_length), **options})

    def resume(carry, until, constants):
        return beam_search_continue(step_fn(constants), carry, until=until, **options)

    def start(source, max_length, constants=None):
        with cast_weights_once(model):
            return begin(source, max_length, constants)

    def advance(carry, until, constants=None):
        with cast_weights_once(model):
            return resume(carry, until, constants)

    def graph(source, max_length, constants=None):
        with cast_weights_once(model):
            result = graph_shrinking_beam_search(
                lambda: begin(source, max_length, constants),
                lambda carry, until: resume(carry, until, constants), beam_size)
        return result.tokens, result.scores, result.attention

    if beam_size <= 1:
        return [greedy]
    return [graph] if in_graph else [start, advance]
