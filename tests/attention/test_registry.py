import re

import pytest

from keras_rnmt.attention import (
    ATTENTION_NAMES,
    BahdanauAttention,
    CoverageAttention,
    LocalAttention,
    LuongAttention,
    RecurrentAttention,
    get_attention,
)

EXPECTED = {
    "bahdanau": (BahdanauAttention, {}),
    "dot": (LuongAttention, {"score": "dot"}),
    "general": (LuongAttention, {"score": "general"}),
    "concat": (LuongAttention, {"score": "concat"}),
    "local-m": (LocalAttention, {"mode": "monotonic"}),
    "local-p": (LocalAttention, {"mode": "predictive"}),
    "recurrent": (RecurrentAttention, {}),
    "coverage": (CoverageAttention, {}),
}


def test_every_name_builds_its_class_with_the_given_arguments():
    assert ATTENTION_NAMES == tuple(EXPECTED)
    for name, (cls, fixed) in EXPECTED.items():
        layer = get_attention(name, units=6, name=f"attention_{name}", dtype="mixed_float16")
        assert type(layer) is cls
        config = layer.get_config()
        assert config["units"] == 6 and config["name"] == f"attention_{name}"
        assert layer.dtype_policy.name == "mixed_float16"
        for key, value in fixed.items():
            assert config[key] == value
    assert get_attention("recurrent", units=8, window=0).window == 0
    assert get_attention("local-p", window=3).window == 3


def test_errors_list_the_valid_names_and_echo_the_input():
    with pytest.raises(ValueError) as error:
        get_attention("multihead", units=4)
    message = str(error.value)
    assert "name='multihead'" in message
    for name in ATTENTION_NAMES:
        assert repr(name) in message
    with pytest.raises(ValueError, match=re.escape("fixes score='dot'")):
        get_attention("dot", score="general")
    with pytest.raises(ValueError, match="'dot', 'general', 'concat'"):
        get_attention("local-m", score="bilinear")
