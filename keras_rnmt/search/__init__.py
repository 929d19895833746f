"""Greedy and beam search over a model step callback; the search never imports the model.

A model exposes ``step_fn(tokens, state) -> (log_probs, new_state, attention)`` over
batch-major tensors; `greedy_search` and `beam_search` drive it with `keras.ops.while_loop`
and return a `SearchResult`. The beam helpers are pure functions of tensors.
"""

from keras_rnmt.search.beam import (
    STOP_RULES,
    BeamState,
    beam_search,
    beam_search_continue,
    beam_search_result,
    beam_search_start,
    check_positive_int,
    check_stop_rule,
)
from keras_rnmt.search.beam_helpers import (
    add_beam_dim,
    coverage_penalty,
    flatten_beam_dim,
    gather_beams,
    length_penalty,
    take_beams,
    unflatten_beam_dim,
)
from keras_rnmt.search.graph_shrinking import graph_shrinking_beam_search
from keras_rnmt.search.greedy import GreedyState, greedy_search
from keras_rnmt.search.output_limits import check_output_limits
from keras_rnmt.search.result import SearchResult
from keras_rnmt.search.shrinking import select_sentences, shrinking_beam_search

__all__ = [
    "STOP_RULES",
    "BeamState",
    "GreedyState",
    "SearchResult",
    "add_beam_dim",
    "beam_search",
    "beam_search_continue",
    "beam_search_result",
    "beam_search_start",
    "check_output_limits",
    "check_positive_int",
    "check_stop_rule",
    "coverage_penalty",
    "flatten_beam_dim",
    "gather_beams",
    "graph_shrinking_beam_search",
    "greedy_search",
    "length_penalty",
    "select_sentences",
    "shrinking_beam_search",
    "take_beams",
    "unflatten_beam_dim",
]
