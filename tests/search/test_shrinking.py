"""`shrinking_beam_search` gives `beam_search`'s hypotheses while shedding finished rows."""

import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import (
    beam_search,
    beam_search_continue,
    beam_search_start,
    select_sentences,
)
from keras_rnmt.search.shrinking import shrinking_beam_search

from .fake_models import BOS, EOS, RandomModel

BATCH, BEAM, STEPS = 11, 3, 12


def stop_state(model):
    """Sentence i emits </s> exactly at step stops[i]: finishing times spread over 1..10."""
    state = model.initial_state(BATCH)
    stops = np.array([1, 9, 2, 2, 10, 3, 1, 4, 6, 1, 2], "int32")
    return dict(state, stop=ops.convert_to_tensor(stops))


def one_loop(seed, limits=None, **options):
    """A random model's fixed-length step, its state, the limits (STEPS unless given), the
    search options and `beam_search`'s result with them: what a chunked search must give."""
    model = RandomModel(seed=seed)
    step = model.fixed_length_step()
    state = stop_state(model)
    options = dict(beam_size=BEAM, eos_id=EOS, length_penalty=1.0, **options)
    limits = np.full((BATCH,), STEPS, "int32") if limits is None else limits
    expected = beam_search(step, state, batch_size=BATCH, bos_id=BOS, max_length=limits,
                           **options)
    return step, state, limits, options, expected


@pytest.mark.parametrize("chunk_steps, min_rows", [
    # Chunks of one step down to one row: a new batch size at almost every step, each a
    # compile of every op under eager JAX (28 s of the JAX pass, against under a second
    # elsewhere). JAX shrinks with the two cases below; the tie-breaks are the same code.
    pytest.param(1, 1, marks=pytest.mark.backends("tensorflow", "torch")),
    (2, 2), (4, 8)])
def test_same_hypotheses_as_one_loop(chunk_steps, min_rows):
    step, state, limits, options, expected = one_loop(3, n_best=2)
    looks = []

    def advance(carry, until):
        looks.append(int(ops.shape(carry.alive_log_probs)[0]))
        return beam_search_continue(step, carry, until=until, **options)

    tokens, scores, attention = shrinking_beam_search(
        lambda: beam_search_start(step, state, batch_size=BATCH, bos_id=BOS, max_length=limits,
                                  **options),
        advance, BEAM, chunk_steps=chunk_steps, min_rows=min_rows)
    np.testing.assert_array_equal(tokens, ops.convert_to_numpy(expected.tokens))
    np.testing.assert_allclose(scores, ops.convert_to_numpy(expected.scores), rtol=1e-6)
    np.testing.assert_allclose(attention, ops.convert_to_numpy(expected.attention), rtol=1e-6)
    # The batch did shrink: fewer rows at the last look than at the first.
    if chunk_steps < 4:
        assert looks[0] == BATCH and looks[-1] <= max(min_rows, 2) < BATCH, looks


def test_select_sentences_gathers_sentences_and_their_beams():
    model = RandomModel(seed=4)
    state = model.initial_state(3)
    carry = beam_search_start(model.step, state, batch_size=3, beam_size=2, bos_id=BOS,
                              eos_id=EOS, max_length=5)
    picked = select_sentences(carry, ops.convert_to_tensor([2, 0], "int32"), beam_size=2)
    memory = ops.convert_to_numpy(carry.model_state["memory"])  # (B * K, S, H)
    np.testing.assert_array_equal(ops.convert_to_numpy(picked.model_state["memory"]),
                                  memory[[4, 5, 0, 1]])
    np.testing.assert_array_equal(ops.convert_to_numpy(picked.limits), [5, 5])
    assert tuple(picked.alive_tokens.shape) == (2, 2, 5)
    assert int(picked.step) == 1  # the carry after the first step
