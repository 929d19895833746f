"""Every model `benchmarks/quality.py` can train is a valid config of its recipe.

`quality.py` passes a model's overrides to `keras-rnmt train` only when a run starts, so a
misspelt key or choice would first fail after the runs queued before it (an hour each).
"""

import importlib

import pytest
import script_helpers  # noqa: F401

from keras_rnmt.cli import load_recipe, parse_overrides

quality = importlib.import_module("quality")  # benchmarks/, on sys.path from script_helpers


def _config(name):
    recipe = load_recipe(quality.recipe_path(name))
    return recipe.config().override(parse_overrides([f"--{item}" for item in quality.MODELS[name]]))


@pytest.mark.backends("tensorflow")
@pytest.mark.parametrize("name", sorted(quality.MODELS))
def test_every_model_is_a_valid_config_of_its_recipe(name):
    _config(name)


@pytest.mark.backends("tensorflow")
def test_the_variants_change_only_what_their_names_say():
    sb = _config("bahdanau").model
    expected = {
        "luong-dot": {"attention": "dot"},
        "luong-concat": {"attention": "concat"},
        "luong-general": {"attention": "general"},
        "local-m": {"attention": "local-m", "window": 10},
        "local-p": {"attention": "local-p", "window": 10},
        "self-attention-encoder": {"encoder_type": "self-attention"},
        "recurrent-k5": {"attention": "recurrent", "window": 5, "memory_units": 128},
    }
    for name, changes in expected.items():
        model = _config(name).model
        changed = {key: value for key, value in model.to_dict().items()
                   if value != getattr(sb, key)}
        # window's default is 5, so recurrent k=5 leaves it as SB has it.
        assert changed == {k: v for k, v in changes.items() if v != getattr(sb, k)}, name


@pytest.mark.backends("tensorflow")
def test_the_self_attention_encoder_trains_pre_ln():
    # Post-LN blocks at SB's Adam 1e-3 without warm-up collapsed every source position to
    # one vector (RESULTS.md §4, "The self-attention encoder"); the Transformer keeps post-LN.
    assert _config("self-attention-encoder").model.normalize_first
    assert not _config("transformer").model.normalize_first
