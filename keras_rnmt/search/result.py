"""The output record of greedy and beam search."""

import dataclasses
from typing import Any

import keras


@dataclasses.dataclass(frozen=True)
class SearchResult:
    """Hypotheses found by `greedy_search` or `beam_search`.

    Shapes use B sentences, N = ``n_best`` hypotheses per sentence (beam search only; greedy
    results have no N axis), T the static output length (``max_steps``, by default the
    largest ``max_length``) and S source positions. Each hypothesis ends with its </s>
    (forced when it reached its sentence's length limit) and is padded with 0 after it.

    Attributes:
        tokens: int32 (B, N, T) / (B, T). Output ids, </s> included, 0 after it.
        scores: float32 (B, N) / (B,). The ranking score: beam search uses
            ``log_probs / lp(lengths) + cp`` (GNMT length and coverage penalties), sorted
            best first; greedy search reports the raw ``log_probs``.
        log_probs: float32 (B, N) / (B,). Sum of the model's log-probabilities of the tokens.
        lengths: int32 (B, N) / (B,). Number of tokens including </s>.
        attention: float32 (B, N, T, S) / (B, T, S), the step function's attention along the
            hypothesis (zeros after </s>), or ``None`` when the step function gives none.

    A beam-search slot that holds no hypothesis (possible only when fewer than ``n_best``
    hypotheses can exist, e.g. ``max_length=1``) has score ``-inf``, length 0, tokens 0.

    The record is a pytree under JAX and a ``tf.nest`` structure under TensorFlow, so it
    can be returned from ``jax.jit`` and ``tf.function``.
    """

    tokens: Any
    scores: Any
    log_probs: Any
    lengths: Any
    attention: Any = None

    def __tf_flatten__(self):
        return (), tuple(getattr(self, field.name) for field in dataclasses.fields(self))

    @classmethod
    def __tf_unflatten__(cls, metadata, components):
        return cls(*components)


if keras.backend.backend() == "jax":
    import jax

    jax.tree_util.register_dataclass(
        SearchResult,
        data_fields=[field.name for field in dataclasses.fields(SearchResult)],
        meta_fields=[],
    )
