"""Attention layers: one base class, one small file per variant, and a registry by name.

| name        | class                                       | paper                       |
| ----------- | ------------------------------------------- | --------------------------- |
| "bahdanau"  | `BahdanauAttention(units)`                  | Bahdanau et al.; Yang Eq. 5 |
| "dot"       | `LuongAttention(score="dot")`               | Luong et al. §3.1           |
| "general"   | `LuongAttention(score="general")`           | Luong et al. §3.1           |
| "concat"    | `LuongAttention(score="concat", units)`     | Luong et al. §3.1           |
| "local-m"   | `LocalAttention(mode="monotonic", window)`  | Luong et al. §3.2           |
| "local-p"   | `LocalAttention(mode="predictive", window)` | Luong et al. §3.2           |
| "recurrent" | `RecurrentAttention(units, window, ...)`    | Yang et al. Eq. 10-13       |
| "coverage"  | `CoverageAttention(units, coverage, ...)`   | Tu et al. 2016              |
"""

from keras_rnmt.attention.bahdanau import BahdanauAttention
from keras_rnmt.attention.base import BaseAttention, masked_softmax
from keras_rnmt.attention.coverage import CoverageAttention
from keras_rnmt.attention.local import LocalAttention
from keras_rnmt.attention.luong import LuongAttention
from keras_rnmt.attention.recurrent import RecurrentAttention, attention_window, memory_norms

# name -> (class, the constructor arguments the name fixes)
_REGISTRY = {
    "bahdanau": (BahdanauAttention, {}),
    "dot": (LuongAttention, {"score": "dot"}),
    "general": (LuongAttention, {"score": "general"}),
    "concat": (LuongAttention, {"score": "concat"}),
    "local-m": (LocalAttention, {"mode": "monotonic"}),
    "local-p": (LocalAttention, {"mode": "predictive"}),
    "recurrent": (RecurrentAttention, {}),
    "coverage": (CoverageAttention, {}),
}
ATTENTION_NAMES = tuple(_REGISTRY)


def get_attention(name, /, **kwargs):
    """Create an attention layer from its name.

    Args:
        name: str, one of `ATTENTION_NAMES`: "bahdanau", "dot", "general", "concat",
            "local-m", "local-p", "recurrent", "coverage".
        **kwargs: constructor arguments of the class (see the table in this module's
            docstring), e.g. `units=256`, `window=5`, and layer arguments such as the
            layer `name=` (`name` itself is positional-only). An argument the name already fixes
            (`score` for "dot", `mode` for "local-m") may not be given a different value.

    Returns:
        A new, unbuilt `BaseAttention` subclass instance.

    Example:

    ```python
    from keras_rnmt.attention import get_attention

    attention = get_attention("recurrent", units=16, window=5)
    ```
    """
    if name not in _REGISTRY:
        valid = ", ".join(repr(known) for known in ATTENTION_NAMES)
        raise ValueError(
            f"Unknown attention name. Valid names are {valid}. Received: name={name!r}"
        )
    cls, fixed = _REGISTRY[name]
    for key, value in fixed.items():
        if key in kwargs and kwargs[key] != value:
            raise ValueError(
                f"get_attention: name={name!r} fixes {key}={value!r}; it cannot be combined with "
                f"{key}={kwargs[key]!r}."
            )
    return cls(**{**kwargs, **fixed})


__all__ = [
    "ATTENTION_NAMES",
    "BahdanauAttention",
    "BaseAttention",
    "CoverageAttention",
    "LocalAttention",
    "LuongAttention",
    "RecurrentAttention",
    "attention_window",
    "get_attention",
    "masked_softmax",
    "memory_norms",
]
