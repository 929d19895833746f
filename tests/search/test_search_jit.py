"""Search compiles: inside `jax.jit` (JAX) and `tf.function`, with and without XLA (TF).

The compiled runs use the scripted model of test_beam_search.py and must give its
hand-derived results (beam 3, alpha = 1, three best; greedy: "a </s>"). ``max_length`` is a
traced tensor there, so the static ``max_steps`` is passed. PyTorch runs eagerly only.
"""

import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import SearchResult, beam_search, greedy_search

from .fake_models import BOS, EOS, SCRIPT_ATTENTION, SCRIPT_TABLE, A, table_step
from .test_beam_search import SCRIPTED

STEP = table_step(SCRIPT_TABLE, SCRIPT_ATTENTION)


def search(state, max_length, batch_size, beam=True):
    common = dict(batch_size=batch_size, bos_id=BOS, eos_id=EOS, max_length=max_length, max_steps=5)
    if not beam:
        return greedy_search(STEP, state, **common)
    return beam_search(
        STEP,
        state,
        beam_size=3,
        length_penalty=1.0,
        n_best=3,
        source_mask=ops.ones((batch_size, 3), "bool"),
        **common,
    )


def assert_scripted(result, batch_size, beam=True):
    assert isinstance(result, SearchResult)
    tokens, scores, log_probs, lengths = (np.array(v) for v in SCRIPTED[3, 1.0])
    if not beam:  # greedy: <s> -> a -> </s>, log .3
        tokens, scores, lengths = tokens[1], scores[1] * 7 / 6, lengths[1]
        log_probs = scores
    repeat = lambda x: np.stack([x] * batch_size)  # noqa: E731
    np.testing.assert_array_equal(ops.convert_to_numpy(result.tokens), repeat(tokens))
    np.testing.assert_array_equal(ops.convert_to_numpy(result.lengths), repeat(lengths))
    np.testing.assert_allclose(ops.convert_to_numpy(result.scores), repeat(scores), rtol=1e-6)
    np.testing.assert_allclose(ops.convert_to_numpy(result.log_probs), repeat(log_probs), rtol=1e-6)
    assert tuple(result.attention.shape) == tuple(result.tokens.shape) + (3,)


def initial_state(batch_size):
    return {"steps": np.zeros((batch_size,), "int32")}


@pytest.mark.backends("jax")  # jax.jit needs the JAX backend
@pytest.mark.parametrize("beam", [True, False], ids=["beam", "greedy"])
def test_search_inside_jax_jit(beam):
    import jax

    compiled = jax.jit(lambda state, max_length: search(state, max_length, 2, beam=beam))
    assert_scripted(compiled(initial_state(2), np.array([5, 5], "int32")), 2, beam=beam)


@pytest.mark.tensorflow_only
@pytest.mark.parametrize("jit_compile", [True, False], ids=["xla", "graph"])
def test_beam_search_inside_tf_function(jit_compile):
    import tensorflow as tf

    compiled = tf.function(
        lambda state, max_length: search(state, max_length, 2), jit_compile=jit_compile
    )
    assert_scripted(compiled(initial_state(2), tf.constant([5, 5])), 2)


@pytest.mark.tensorflow_only
def test_beam_search_in_tf_function_with_unknown_batch_size():
    import tensorflow as tf

    signature = ({"steps": tf.TensorSpec([None], tf.int32)}, tf.TensorSpec([None], tf.int32))

    @tf.function(input_signature=signature)
    def compiled(state, max_length):
        return search(state, max_length, tf.shape(max_length)[0])

    assert_scripted(compiled(initial_state(3), tf.constant([5, 5, 5])), 3)


def test_greedy_reference_is_a_eos():
    # Guards the greedy expectation used above against the eager search.
    result = search(initial_state(1), 5, 1, beam=False)
    np.testing.assert_array_equal(ops.convert_to_numpy(result.tokens), [[A, EOS, 0, 0, 0]])
