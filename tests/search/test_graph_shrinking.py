"""`graph_shrinking_beam_search` gives `beam_search`'s result while shedding finished rows
inside one TensorFlow graph (what the SavedModel and `Translator` under TensorFlow run)."""

import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import beam_search, beam_search_continue, beam_search_start

from .fake_models import BOS, EOS, RandomModel
from .test_shrinking import BATCH, BEAM, STEPS, one_loop

pytestmark = pytest.mark.tensorflow_only


def run(step, state, limits, options, chunk_steps=4, traced=False, sizes=None):
    import tensorflow as tf

    from keras_rnmt.search.graph_shrinking import graph_shrinking_beam_search

    def search(state, limits):
        def advance(carry, until):
            if sizes is not None:
                sizes.append(carry.alive_log_probs.shape[0])
            return beam_search_continue(step, carry, until=until, **options)

        return graph_shrinking_beam_search(
            lambda: beam_search_start(step, state, batch_size=tf.shape(limits)[0], bos_id=BOS,
                                      max_length=limits, max_steps=STEPS, **options),
            advance, options["beam_size"], chunk_steps=chunk_steps)

    if traced:  # as in the SavedModel: the batch size is unknown while tracing
        spec = tf.nest.map_structure(
            lambda x: tf.TensorSpec([None] + list(x.shape[1:]), x.dtype), (state, limits))
        search = tf.function(search, input_signature=spec, autograph=False)
    return search(state, tf.constant(limits))


def assert_same_result(result, expected):
    for field in ("tokens", "lengths"):
        np.testing.assert_array_equal(ops.convert_to_numpy(getattr(result, field)),
                                      ops.convert_to_numpy(getattr(expected, field)), field)
    for field in ("scores", "log_probs", "attention"):
        got, want = getattr(result, field), getattr(expected, field)
        if want is None:
            assert got is None, field
        else:
            np.testing.assert_allclose(ops.convert_to_numpy(got), ops.convert_to_numpy(want),
                                       rtol=1e-6, err_msg=field)


@pytest.mark.parametrize("chunk_steps", [1, 4])
@pytest.mark.parametrize("traced", [False, True])
def test_same_result_as_one_loop(chunk_steps, traced):
    limits = np.full((BATCH,), STEPS, "int32")
    limits[4] = 7  # sentence 4 would stop at 10: its limit forces </s> at step 6 instead
    step, state, limits, options, expected = one_loop(5, limits, n_best=2)
    sizes = []  # carry rows seen by each chunk (traced: once, unknown)
    result = run(step, state, limits, options, chunk_steps, traced, sizes)
    assert tuple(result.tokens.shape) == (BATCH, 2, STEPS)
    assert tuple(result.attention.shape)[:3] == (BATCH, 2, STEPS)
    assert_same_result(result, expected)
    if traced:
        assert sizes == [None]
    elif chunk_steps == 1:  # eager: the batch shrank as sentences finished
        assert sizes[0] == BATCH and sizes[-1] < BATCH // 2, sizes


def test_without_the_attention_history():
    step, state, limits, options, expected = one_loop(6, keep_attention=False)
    options.pop("keep_attention")  # beam_search_continue reads it from the carry
    import tensorflow as tf

    from keras_rnmt.search.graph_shrinking import graph_shrinking_beam_search

    result = graph_shrinking_beam_search(
        lambda: beam_search_start(step, state, batch_size=BATCH, bos_id=BOS, max_length=limits,
                                  keep_attention=False, **options),
        lambda carry, until: beam_search_continue(step, carry, until=until, **options),
        BEAM)
    assert result.attention is None and expected.attention is None
    assert isinstance(result.tokens, tf.Tensor)
    assert_same_result(result, expected)


def test_a_batch_done_after_its_first_step():
    """max_length=1: every sentence gets </s> forced at step 0 and the loop never runs."""
    model = RandomModel(seed=7)
    step = model.step  # </s> is possible at any step (the fixed-length step forbids it)
    state = model.initial_state(BATCH)
    options = dict(beam_size=BEAM, eos_id=EOS, n_best=2)
    limits = np.ones((BATCH,), "int32")
    expected = beam_search(step, state, batch_size=BATCH, bos_id=BOS, max_length=limits,
                           max_steps=STEPS, **options)
    sizes = []
    result = run(step, state, limits, options, sizes=sizes)
    assert sizes == []
    assert_same_result(result, expected)
    np.testing.assert_array_equal(ops.convert_to_numpy(result.lengths)[:, 0], 1)
