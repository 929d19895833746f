"""The keras-hub Transformer comparison model: shapes, cached search step, saving, training."""

import os

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.models import ModelConfig, build_model
from keras_rnmt.models.search_log_probs import search_log_probs
from keras_rnmt.models.transformer_model import TransformerTranslationModel

VOCAB = 20


def tiny_config(**overrides):
    values = dict(source_vocab_size=VOCAB, target_vocab_size=VOCAB, model_type="transformer",
                  embedding_dim=16, num_heads=2, intermediate_dim=32, transformer_layers=1,
                  dropout=0.0)
    values.update(overrides)
    return ModelConfig(**values)


def copy_batch(n=64, length=6, seed=0):
    """Source: random ids 4..19 with ragged lengths, 0-padded; target = source."""
    rng = np.random.default_rng(seed)
    source = np.zeros((n, length), "int32")
    target_in = np.zeros((n, length + 1), "int32")
    target_out = np.zeros((n, length + 1), "int32")
    for row in range(n):
        size = rng.integers(2, length + 1)
        words = rng.integers(4, VOCAB, size)
        source[row, :size] = words
        target_in[row, 0] = 2
        target_in[row, 1:size + 1] = words
        target_out[row, :size] = words
        target_out[row, size] = 3
    return source, target_in, target_out


def test_forward_logits_shape_and_dtype():
    model = build_model(tiny_config())
    assert isinstance(model, TransformerTranslationModel)
    source, target_in, _ = copy_batch(n=2, length=4)
    logits = model((source, target_in))
    assert tuple(logits.shape) == (2, 5, VOCAB)
    assert keras.backend.standardize_dtype(logits.dtype) == "float32"


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post-LN", "pre-LN"])
def test_cached_steps_equal_teacher_forced_log_probs(normalize_first):
    model = TransformerTranslationModel(
        tiny_config(transformer_layers=2, normalize_first=normalize_first).to_dict())
    source, target_in, _ = copy_batch(n=2, length=4, seed=1)
    expected = ops.convert_to_numpy(search_log_probs(model((source, target_in))))
    state = model.search_state(source, max_length=8)
    assert tuple(state["cache"]["self"][0].shape) == (2, 2, 8, 2, 8)
    assert tuple(state["cache"]["cross"][1].shape) == (2, 2, 4, 2, 8)
    steps = []
    for j in range(target_in.shape[1]):
        log_probs, state, attention = model.search_step(
            ops.convert_to_tensor(target_in[:, j]), state
        )
        assert attention is None
        steps.append(ops.convert_to_numpy(log_probs))
    np.testing.assert_array_equal(ops.convert_to_numpy(state["step"]), target_in.shape[1])
    # Compare real target positions only: pads past a sentence's end see different keys.
    real = target_in != 0
    np.testing.assert_allclose(np.stack(steps, axis=1)[real], expected[real], atol=1e-4)


@pytest.mark.parametrize("normalize_first", [False, True], ids=["post-LN", "pre-LN"])
def test_save_and_reload_gives_identical_logits(tmp_path, normalize_first):
    model = build_model(tiny_config(normalize_first=normalize_first))
    source, target_in, _ = copy_batch(n=2, length=4, seed=2)
    logits = ops.convert_to_numpy(model((source, target_in)))
    path = os.path.join(tmp_path, "transformer.keras")
    model.save(path)
    restored = keras.saving.load_model(path)
    assert isinstance(restored, TransformerTranslationModel)
    assert restored.config == model.config
    np.testing.assert_array_equal(ops.convert_to_numpy(restored((source, target_in))), logits)


def test_pre_ln_normalises_the_stacks_outputs_once_and_post_ln_does_not_add_a_norm():
    source, target_in, _ = copy_batch(n=2, length=4, seed=3)
    pre = build_model(tiny_config(normalize_first=True))
    post = build_model(tiny_config())
    assert all(block.normalize_first for block in pre.encoder.blocks + pre.decoder.blocks)
    assert not any(block.normalize_first for block in post.encoder.blocks + post.decoder.blocks)
    assert post.encoder.final_norm is None and post.decoder.final_norm is None
    # Pre-LN: the last block's residual stream is normalised once, with the norm's initial
    # scale 1 and offset 0, so every position of the memory has mean 0 and variance 1
    # (less LayerNormalization's epsilon of 1e-5).
    memory, _, _ = pre.encoder(source)
    memory = ops.convert_to_numpy(memory)
    np.testing.assert_allclose(memory.mean(axis=-1), 0.0, atol=1e-5)
    np.testing.assert_allclose(memory.var(axis=-1), 1.0, atol=1e-3)
    names = {v.path for v in pre.weights}
    assert {"encoder/final_norm/gamma", "decoder/final_norm/gamma"} <= names, sorted(names)


def test_fit_learns_copy_task():
    source, target_in, target_out = copy_batch(n=64, length=4)
    model = build_model(tiny_config())
    model.compile(
        optimizer=keras.optimizers.Adam(3e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True, ignore_class=0),
    )
    # 40 steps; measured last-epoch losses 1.6-2.2 across backends from about ln(20) = 3.0.
    history = model.fit((source, target_in), target_out, batch_size=16, epochs=10, verbose=0)
    losses = history.history["loss"]
    assert losses[0] > 2.5, losses
    assert losses[-1] < 2.4, losses
