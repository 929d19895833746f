"""Beam search agrees with keras-hub's `BeamSampler` on the same random step function.

The two differ in how they treat </s>: BeamSampler keeps a finished beam in its K slots and
keeps extending it, while `beam_search` moves it to a frozen finished pool and refills K
alive beams. They find the same hypotheses when every beam of a sentence emits </s> at the
same step, so the model here (`RandomModel.fixed_length_step`) emits </s> exactly at step
``stop[sentence]`` (and, for BeamSampler, keeps emitting it at no cost afterwards). The
tokens before it come from a random recurrent model with attention, so the comparison
checks the expansion, the top-k and the reordering of a nested state.
"""

import keras_hub
import numpy as np
from keras import ops

from keras_rnmt.search import beam_search

from .fake_models import BOS, EOS, RandomModel


def test_hypotheses_match_keras_hub_beam_sampler():
    batch, beam = 3, 3
    stops = np.array([3, 5, 4], dtype="int32")
    model = RandomModel(seed=7)
    state = dict(model.initial_state(batch), stop=ops.convert_to_tensor(stops))
    step = model.fixed_length_step()

    ours = beam_search(
        step,
        state,
        batch_size=batch,
        beam_size=beam,
        bos_id=BOS,
        eos_id=EOS,
        max_length=8,
        n_best=beam,
    )

    def next_fn(prompt, cache, index):
        # BeamSampler softmaxes the "logits"; the softmax of log-probabilities is identity.
        log_probs, cache, _ = step(ops.take(prompt, index - 1, axis=1), cache)
        return log_probs, None, cache

    prompt = np.zeros((batch, stops.max() + 2), dtype="int32")  # <s>, tokens, </s>
    prompt[:, 0] = BOS
    mask = np.zeros(prompt.shape, dtype="bool")
    mask[:, 0] = True
    sampler = keras_hub.samplers.BeamSampler(num_beams=beam, return_all_beams=True)
    hub_tokens, hub_log_probs = sampler(
        next=next_fn,
        prompt=ops.convert_to_tensor(prompt),
        cache=state,
        index=1,
        mask=ops.convert_to_tensor(mask),
        stop_token_ids=[EOS],
    )
    hub_tokens, hub_log_probs = (
        ops.convert_to_numpy(hub_tokens),
        ops.convert_to_numpy(hub_log_probs),
    )

    tokens = ops.convert_to_numpy(ours.tokens)
    log_probs = ops.convert_to_numpy(ours.log_probs)
    for b, stop in enumerate(stops):
        np.testing.assert_array_equal(tokens[b, :, : stop + 1], hub_tokens[b, :, 1 : stop + 2])
        assert (tokens[b, :, stop] == EOS).all()
    np.testing.assert_allclose(log_probs, hub_log_probs, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(
        ops.convert_to_numpy(ours.lengths), np.stack([stops + 1] * beam, 1)
    )
