import inspect
import re

import keras
import numpy as np
import pytest
from keras import ops

import keras_rnmt.attention as attention_module
from keras_rnmt.attention import ATTENTION_NAMES, BaseAttention, get_attention, masked_softmax
from keras_rnmt.attention.base import large_negative

from .helpers import MASK, MEMORY, QUERY, build, make_variant, padded_batch, run_steps, to_numpy


def test_masked_softmax_literal_values_and_masking_value():
    # e = [0, ln 3, 7 (masked)] -> [1, 3] / 4 = [0.25, 0.75], exactly 0 where masked.
    energies = np.array([[0.0, np.log(3.0), 7.0]], dtype="float32")
    weights = to_numpy(masked_softmax(energies, np.array([[True, True, False]]), "float32"))
    np.testing.assert_allclose(weights[:, :2], [[0.25, 0.75]], rtol=1e-6)
    assert weights[0, 2] < 1e-30
    # The masking value fits the compute dtype and is never -inf.
    assert large_negative("float16") == -65504.0
    assert np.isfinite(np.float16(large_negative("float16")))
    assert large_negative("float32") == -1e9
    assert large_negative("bfloat16") == -1e9


class ToyAttention(BaseAttention):
    """Exercises the template: energies = position index, a support without the last word
    and a prior of 1/2, and a state counting the steps and accumulating the weights."""

    def initial_state(self, memory, mask=None):
        return (ops.zeros(ops.shape(memory)[:1]), ops.zeros(ops.shape(memory)[:2]))

    def advance_state(self, query, keys, mask, state):
        return (state[0] + 1.0, state[1])

    def score(self, query, keys, mask, state, step):
        positions = ops.cast(ops.arange(ops.shape(keys)[1]), self.compute_dtype)
        return ops.zeros_like(keys[..., 0]) + positions[None, :] * state[0][:, None]

    def support(self, query, mask, step):
        not_last = ops.arange(ops.shape(mask)[1]) < ops.shape(mask)[1] - 1
        return ops.logical_and(mask, not_last[None, :]), ops.full(ops.shape(mask), 0.5)

    def update_state(self, weights, query, keys, mask, state):
        return (state[0], state[1] + weights)


def test_template_calls_the_hooks_in_order():
    layer = build(ToyAttention())
    contexts, weights, states = run_steps(layer, QUERY, MEMORY, MASK, steps=2)
    # Step 1 (after advance_state: count 1): energies [0, 1, 2]; support [T, T, F] in row 1 and
    # [T, T, F] in row 2 (pad); softmax over {0, 1} = [1, e] / (1 + e), times the prior 1/2.
    first = np.array([1.0, np.e, 0.0]) / (1.0 + np.e) / 2.0
    np.testing.assert_allclose(to_numpy(weights[0]), [first, first], rtol=1e-6)
    np.testing.assert_allclose(
        to_numpy(contexts[0]), np.einsum("s,bsd->bd", first, MEMORY), rtol=1e-6
    )
    # Step 2 (count 2): energies [0, 2, 4] -> [1, e^2] / (1 + e^2) / 2; the state accumulates.
    second = np.array([1.0, np.e**2, 0.0]) / (1.0 + np.e**2) / 2.0
    np.testing.assert_allclose(to_numpy(weights[1]), [second, second], rtol=1e-6)
    np.testing.assert_allclose(to_numpy(states[1][0]), [2.0, 2.0])
    np.testing.assert_allclose(to_numpy(states[1][1]), [first + second] * 2, rtol=1e-6)


def test_mask_none_means_all_real_and_an_empty_row_gives_zeros():
    layer = build(get_attention("general"))
    keys = layer.prepare(MEMORY)
    _, without_mask, _ = layer(QUERY, MEMORY, keys)
    _, all_real, _ = layer(QUERY, MEMORY, keys, mask=np.ones((2, 3), bool))
    np.testing.assert_array_equal(to_numpy(without_mask), to_numpy(all_real))
    context, weights, _ = layer(QUERY, MEMORY, keys, mask=np.zeros((2, 3), bool))
    assert np.all(to_numpy(weights) == 0.0) and np.all(to_numpy(context) == 0.0)


def test_unbuilt_and_abstract_errors():
    with pytest.raises(ValueError, match=re.escape("build(query_shape, memory_shape)")):
        get_attention("bahdanau", units=3).prepare(MEMORY)
    with pytest.raises(ValueError, match="units=-2"):
        BaseAttention(units=-2)
    layer = build(BaseAttention())
    with pytest.raises(NotImplementedError, match="score"):
        layer(QUERY, MEMORY, layer.prepare(MEMORY))


def test_keys_and_state_are_batch_major_for_beam_search(subtests):
    """Beam search tiles memory / keys / mask / state along axis 0 and reorders them with a
    gather on axis 0: the outputs must follow the same gather."""
    query, memory, mask = padded_batch()
    order = np.array([2, 0, 0, 3])  # reorder with repeats, as after a beam step
    take = lambda tree: keras.tree.map_structure(lambda t: ops.take(t, order, axis=0), tree)  # noqa: E731
    for name in ATTENTION_NAMES:
        with subtests.test(name=name):
            layer = make_variant(name)
            layer.build(query.shape, memory.shape)
            keys = layer.prepare(memory, mask)
            state = layer.initial_state(memory, mask)
            context, weights, state = layer(query, memory, keys, mask=mask, state=state, step=1)
            want = layer(query, memory, keys, mask=mask, state=state, step=2)
            got = layer(
                take(query), take(memory), take(keys), mask=take(mask), state=take(state), step=2
            )
            for expected, actual in zip(keras.tree.flatten(take(want)), keras.tree.flatten(got)):
                np.testing.assert_allclose(to_numpy(actual), to_numpy(expected), atol=1e-6)


def test_docstring_examples_run(subtests):
    checked = []
    for name in attention_module.__all__:
        obj = getattr(attention_module, name)
        doc = inspect.getdoc(obj) if callable(obj) else None
        for example in re.findall(r"```python\n(.*?)```", doc or "", flags=re.S):
            with subtests.test(name=name):
                namespace = {}
                exec(compile(example, f"<{name} example>", "exec"), namespace)
                if "weights" not in namespace:
                    continue
                # Layer examples end with one attention call: check its contract.
                weights = to_numpy(namespace["weights"])
                mask = np.asarray(namespace["mask"])
                batch, source_len = mask.shape
                assert weights.shape == (batch, source_len), name
                assert to_numpy(namespace["context"]).shape == (
                    batch, np.asarray(namespace["memory"]).shape[-1]), name
                assert np.all(weights[~mask] == 0), name  # nothing on padding
                total = weights.sum(-1)
                # A distribution over the real words (local-p's Gaussian scales it down).
                assert np.all(total <= 1 + 1e-5) and np.all(total > 0), name
                if name != "LocalAttention":
                    np.testing.assert_allclose(total, 1.0, atol=1e-5)
                checked.append(name)
    assert len(checked) >= 6, checked  # every layer's example, BaseAttention's included


@pytest.mark.tensorflow_only
def test_unknown_batch_and_source_length_in_a_tf_function(subtests):
    """What a SavedModel export traces: batch and source length unknown, step a tensor."""
    import tensorflow as tf

    query, memory, mask = padded_batch()
    signature = [
        tf.TensorSpec((None, query.shape[1])),
        tf.TensorSpec((None, None, memory.shape[2])),
        tf.TensorSpec((None, None), tf.bool),
    ]
    for name in ATTENTION_NAMES:
        with subtests.test(name=name):
            layer = make_variant(name)
            layer.build((None, query.shape[1]), (None, None, memory.shape[2]))

            @tf.function(input_signature=signature)
            def two_steps(query, memory, mask, layer=layer):
                keys = layer.prepare(memory, mask)
                state = layer.initial_state(memory, mask)
                for step in range(2):
                    _, weights, state = layer(
                        query, memory, keys, mask=mask, state=state, step=tf.constant(step)
                    )
                return weights

            weights = to_numpy(two_steps(query, memory, mask))
            assert weights.shape == mask.shape and np.all(weights[~mask] == 0.0)
