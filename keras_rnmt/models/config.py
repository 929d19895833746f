"""Model configuration: one dataclass, every field commented with its default and choices.

A config is plain data: recipes write it as code, the run directory stores it as JSON, and
`keras-rnmt train RECIPE --key value` overrides it. An unknown key or a bad choice is an error
that lists the valid ones.
"""

import dataclasses
from dataclasses import dataclass

MODEL_TYPES = ("rnn", "transformer")
ENCODER_TYPES = ("rnn", "self-attention")
CELLS = ("lstm", "gru")
ATTENTIONS = (
    "none", "bahdanau", "dot", "general", "concat", "local-m", "local-p", "recurrent", "coverage"
)
ATTENTION_ORDERS = ("luong", "bahdanau")
INPUT_FEEDINGS = ("attentional", "context", "none")


@dataclass
class ModelConfig:
    """Everything needed to build a translation model.

    Defaults are the standard benchmark config (SB): embeddings 256, bi-LSTM encoder 256 per
    direction, one LSTM decoder layer of 512, additive attention from the new decoder state
    with input feeding of the attentional vector, a learned bridge, dropout 0.2.
    """

    source_vocab_size: int = 0  # filled from the source tokenizer
    target_vocab_size: int = 0  # filled from the target tokenizer
    model_type: str = "rnn"  # "rnn" | "transformer" (keras-hub Transformer comparison)
    encoder_type: str = "rnn"  # "rnn" | "self-attention" (keras-hub TransformerEncoder stack)
    cell: str = "lstm"  # "lstm" | "gru", encoder and decoder
    embedding_dim: int = 256  # source and target embeddings
    encoder_units: int = 256  # per direction for the bidirectional RNN encoder
    encoder_layers: int = 1  # stacked encoder layers
    bidirectional: bool = True  # bidirectional RNN encoder (Yang et al. Eq. 1-2)
    decoder_units: int = 512  # decoder RNN units (every layer)
    decoder_layers: int = 1  # stacked decoder RNN layers
    attention: str = "bahdanau"  # one of ATTENTIONS; "none" = Collins' encoder-decoder
    attention_units: int = 0  # hidden size of additive/concat scores; 0 = decoder_units
    window: int = 5  # recurrent: k (window 2k+1); local: D (window 2D+1; Luong: 10)
    memory_units: int = 0  # dynamic memory size; 0 = (attention_units or decoder_units) // 2
    coverage: str = "neural"  # coverage attention: "neural" | "linguistic"
    attention_order: str = "luong"  # "luong": attend with s_j; "bahdanau": attend with s_{j-1}
    input_feeding: str = "attentional"  # "attentional" (h~_{j-1}) | "context" (c_{j-1}, Yang Eq. 4) | "none"
    bridge: bool = True  # learned bridge from the encoder's final state to the decoder's initial state
    dropout: float = 0.2  # embeddings, between encoder layers, on h~_j (not inside the decoder loop)
    teacher_forcing_ratio: float = 1.0  # < 1 enables scheduled sampling
    num_heads: int = 4  # self-attention encoder / Transformer heads
    intermediate_dim: int = 1024  # self-attention encoder / Transformer feed-forward size
    transformer_layers: int = 3  # self-attention encoder / Transformer layers per stack
    # self-attention encoder / Transformer: layer norm before each sublayer and once after
    # the stack ("pre-LN", Xiong et al. 2020; JoeyNMT's default); False: after (Vaswani),
    # which needs a warm-up: at Adam 1e-3 without one, post-LN self-attention encoder blocks
    # collapsed every source position to one vector, so recipes/multi30k.py sets True. The
    # default stays False: run directories written before this field existed were post-LN.
    normalize_first: bool = False
    max_positions: int = 512  # longest sequence the position encoding supports (Transformer)

    def __post_init__(self):
        _check_choice("model_type", self.model_type, MODEL_TYPES)
        _check_choice("encoder_type", self.encoder_type, ENCODER_TYPES)
        _check_choice("cell", self.cell, CELLS)
        _check_choice("attention", self.attention, ATTENTIONS)
        _check_choice("attention_order", self.attention_order, ATTENTION_ORDERS)
        _check_choice("input_feeding", self.input_feeding, INPUT_FEEDINGS)
        _check_choice("coverage", self.coverage, ("neural", "linguistic"))
        for name in ("embedding_dim", "encoder_units", "encoder_layers", "decoder_units",
                     "decoder_layers", "num_heads", "intermediate_dim", "transformer_layers",
                     "max_positions"):
            _check_number(name, getattr(self, name), 1)
        for name in ("source_vocab_size", "target_vocab_size", "attention_units", "window",
                     "memory_units"):
            _check_number(name, getattr(self, name), 0)
        if not 0.0 <= self.dropout < 1.0:
            raise ValueError(f"`dropout` must be in [0, 1). Received: dropout={self.dropout}")
        if not 0.0 < self.teacher_forcing_ratio <= 1.0:
            raise ValueError(
                "`teacher_forcing_ratio` must be in (0, 1]. "
                f"Received: teacher_forcing_ratio={self.teacher_forcing_ratio}"
            )

    @classmethod
    def from_dict(cls, values):
        """Build a config from a dict; unknown keys are an error listing the valid ones."""
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(
                f"Unknown model config key(s) {unknown}. Valid keys: {', '.join(names)}"
            )
        return cls(**values)

    def to_dict(self):
        return dataclasses.asdict(self)

    def replace(self, **changes):
        return self.from_dict({**self.to_dict(), **changes})


def _check_choice(name, value, choices):
    if value not in choices:
        raise ValueError(
            f"Unknown {name} {value!r}. Valid choices: {', '.join(repr(c) for c in choices)}"
        )


def _check_number(name, value, minimum, kind=int):
    """Raise a ValueError naming the config key unless `value` is a `kind` >= `minimum`
    (an int where `kind` is float too), so a bad size fails before any data is read."""
    kinds = (int, float) if kind is float else (int,)
    if isinstance(value, bool) or not isinstance(value, kinds) or not value >= minimum:
        what = "a number" if kind is float else "an int"
        raise ValueError(f"`{name}` must be {what} >= {minimum}. Received: {name}={value!r}")
