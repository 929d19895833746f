"""The beam step keeps state leaves the model step passes through (encoder memory,
attention keys) in place instead of gathering them (`gather_beams(..., previous=...)`)."""

import numpy as np
import pytest
from keras import ops

from keras_rnmt.search import beam_search, beam_search_continue, beam_search_start

from .fake_models import BOS, EOS, RandomModel


def to_numpy(x):
    return ops.convert_to_numpy(x)


def test_a_state_leaf_the_step_passes_through_is_not_reordered_and_gives_the_same_search():
    # RandomModel returns its memory unchanged, so `advance` keeps that leaf in place
    # (`gather_beams(..., previous=...)`, every backend); a step that returns a copy gets it
    # gathered.
    # Both searches must agree, and the memory the first carries must still be each
    # sentence's own.
    model = RandomModel(seed=3)
    state = model.initial_state(3)

    def copying_step(tokens, state):
        log_probs, new_state, attention = model.step(tokens, state)
        return log_probs, dict(new_state, memory=new_state["memory"] + 0.0), attention

    options = dict(batch_size=3, beam_size=3, bos_id=BOS, eos_id=EOS, max_length=7,
                   length_penalty=1.0, n_best=2)
    kept = beam_search(model.step, state, **options)
    copied = beam_search(copying_step, state, **options)
    for field in ("tokens", "scores", "log_probs", "lengths", "attention"):
        np.testing.assert_array_equal(to_numpy(getattr(kept, field)),
                                      to_numpy(getattr(copied, field)))
    del options["n_best"]
    carry = beam_search_start(model.step, state, **options)
    carry = beam_search_continue(model.step, carry, beam_size=3, eos_id=EOS, length_penalty=1.0)
    assert int(carry.step) > 1
    np.testing.assert_array_equal(to_numpy(carry.model_state["memory"]),
                                  np.repeat(to_numpy(state["memory"]), 3, axis=0))


@pytest.mark.backends("tensorflow", "torch")
def test_eager_steps_keep_the_passed_through_leaf_as_the_same_tensor():
    # Eagerly (PyTorch always; TensorFlow outside tf.function) the while loop runs in
    # Python, so the leaf kept in place is the very tensor the search started from: no
    # backend gathers it (under jax.jit the identity is not observable).
    model = RandomModel(seed=3)
    options = dict(batch_size=3, beam_size=3, bos_id=BOS, eos_id=EOS, max_length=7,
                   length_penalty=1.0)
    start = beam_search_start(model.step, model.initial_state(3), **options)
    carry = beam_search_continue(model.step, start, beam_size=3, eos_id=EOS, length_penalty=1.0)
    assert int(carry.step) > int(start.step)
    assert carry.model_state["memory"] is start.model_state["memory"]
