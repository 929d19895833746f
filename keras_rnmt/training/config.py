"""Training configuration: data, vocabulary, optimisation and evaluation settings.

Recipes build a `TrainConfig` as code; the command line overrides any field of it or of
its `ModelConfig` by name (`--attention recurrent --window 5 --epochs 12`).
"""

import dataclasses
import json
from dataclasses import dataclass, field

from keras_rnmt.matmul_precision import MATMUL_PRECISIONS
from keras_rnmt.models.config import ModelConfig, _check_choice, _check_number
from keras_rnmt.training.distribution import DISTRIBUTIONS

DATASETS = ("toy", "multi30k")
POLICIES = ("float32", "mixed_float16", "mixed_bfloat16")
# The `jit_compile` choices and the `model.compile(jit_compile=...)` argument of each.
JIT_COMPILE = {"auto": "auto", "true": True, "false": False}


@dataclass
class TrainConfig:
    """Everything a run needs besides the model; defaults are the SB benchmark's."""

    model: ModelConfig = field(default_factory=ModelConfig)
    dataset: str = "toy"  # "toy" (embedded synthetic pair) | "multi30k"
    source_lang: str = "en"  # multi30k: "en" | "de" | "fr" | "cs"
    target_lang: str = "de"  # multi30k: "en" | "de" | "fr" | "cs"
    variant: str = "tok"  # multi30k: "tok" (lc.norm.tok, the literature's) | "raw"
    data_dir: str = ""  # multi30k folder; "" = $KERAS_RNMT_DATA/multi30k or download
    toy_examples: int = 6000  # toy: training pairs
    tokenizer: str = "word"  # "word" | "wordpiece" | "sentencepiece"
    lowercase: bool = False  # word tokenizer: lowercase before splitting
    split_punctuation: bool = False  # word tokenizer: separate punctuation from words
    min_frequency: int = 2  # word vocabulary: keep words seen at least this often
    max_vocabulary: int = 0  # vocabulary cap (subword: its size); 0 = no cap / 8000
    max_length: int = 50  # training pairs longer than this (words) are dropped, and counted
    batch_size: int = 64  # sentences per batch (batch_by="tokens": padded batch x longest side)
    batch_by: str = "sentences"  # "sentences" | "tokens"
    bucket_width: int = 16  # length bucket width; batches are padded to bucket bounds
    shuffle_batches: bool = True  # shuffle the batches too, not only the pairs (make_dataset)
    # Batch the training length buckets' leftovers together (make_dataset): fewer shapes to
    # compile; off, each bucket keeps its own leftovers (at width 1 on Multi30k, +0.37 and
    # +0.04 test BLEU over three seeds, not significant: RESULTS.md §4, "Reading, three seed
    # pairs with the leftovers not merged"). Validation batches always merge (training_datasets).
    merge_remainders: bool = False
    seed_by_epoch: bool = True  # shuffle each epoch from (seed, epoch): resumed runs train alike
    epochs: int = 10  # training epochs (upper bound with early stopping)
    steps_per_epoch: int = 0  # 0 = one pass over the training data
    optimizer: str = "adam"  # "adam" | "sgd" | "paper-sgd" (Yang et al. §3.2)
    learning_rate: float = 0.0  # 0 = the optimizer's default (adam 1e-3, sgd 0.1, paper-sgd 0.7)
    warmup_steps: int = 0  # > 0: linear warm-up to learning_rate, then 1/sqrt(step) decay
    lr_decay: float = 0.0  # in (0, 1): multiply the rate by it on a validation plateau
    lr_patience: int = 1  # lr_decay: epochs without validation improvement before each decay
    clipnorm: float = 1.0  # global-norm gradient clipping; 0 = the optimizer's (none; paper-sgd 3)
    uniform_init: float = 0.0  # > 0: re-initialise all weights in ±uniform_init (paper: 0.1)
    init_from: str = ""  # a run directory: start from its best.keras weights (fine-tuning)
    label_smoothing: float = 0.0  # cross-entropy label smoothing
    dtype_policy: str = "float32"  # "float32" | "mixed_float16" | "mixed_bfloat16"
    # "bfloat16" (JAX, PyTorch): float32 model, the decoder's products from bfloat16 operands with
    # float32 sums (keras_rnmt.matmul_precision; 4-6x faster matmuls on a CPU with AMX).
    matmul_precision: str = "float32"
    distribute: str = "none"  # "none" | "data-parallel" (every local device; JAX, TensorFlow)
    jit_compile: str = "auto"  # "auto" (XLA under JAX; under TensorFlow on a GPU) | "true" | "false"
    seed: int = 0  # data shuffling and initialisation
    patience: int = 3  # early stopping on validation BLEU (epochs without improvement)
    keep_checkpoints: int = 0  # > 0: keep the last N epochs' weights for `keras-rnmt average`
    heatmap_sentences: int = 3  # attention heatmaps of this many validation sentences per epoch
    validation_bleu: bool = True  # greedy-decode the validation set each epoch (sacreBLEU)
    validation_sentences: int = 0  # 0 = the whole validation set
    beam_size: int = 5  # final test evaluation beam
    length_penalty: float = 1.0  # GNMT length penalty alpha for the final evaluation

    def __post_init__(self):
        if isinstance(self.model, dict):
            self.model = ModelConfig.from_dict(self.model)
        _check_choice("dataset", self.dataset, DATASETS)
        _check_choice("tokenizer", self.tokenizer, ("word", "wordpiece", "sentencepiece"))
        _check_choice("batch_by", self.batch_by, ("sentences", "tokens"))
        _check_choice("dtype_policy", self.dtype_policy, POLICIES)
        _check_choice("matmul_precision", self.matmul_precision, MATMUL_PRECISIONS)
        _check_choice("optimizer", self.optimizer, ("adam", "sgd", "paper-sgd"))
        _check_choice("distribute", self.distribute, DISTRIBUTIONS)
        _check_choice("jit_compile", self.jit_compile, tuple(JIT_COMPILE))
        for name in ("epochs", "batch_size", "bucket_width", "min_frequency", "toy_examples",
                     "beam_size"):
            _check_number(name, getattr(self, name), 1)
        for name in ("max_vocabulary", "steps_per_epoch", "warmup_steps", "lr_patience",
                     "patience", "heatmap_sentences", "validation_sentences"):
            _check_number(name, getattr(self, name), 0)
        for name in ("learning_rate", "clipnorm", "uniform_init", "length_penalty"):
            _check_number(name, getattr(self, name), 0, kind=float)
        if self.lr_decay and (self.warmup_steps or self.optimizer == "paper-sgd"):
            raise ValueError(
                "lr_decay (decay on a validation plateau) needs a constant learning rate; it "
                "cannot be combined with warmup_steps or the 'paper-sgd' schedule. Received: "
                f"lr_decay={self.lr_decay}, warmup_steps={self.warmup_steps}, "
                f"optimizer={self.optimizer!r}"
            )
        if self.lr_decay and not 0.0 < self.lr_decay < 1.0:
            raise ValueError(f"lr_decay must be in (0, 1) (0 = off). Received: {self.lr_decay}")
        if self.keep_checkpoints < 0:
            raise ValueError("keep_checkpoints must be >= 0 (0 = keep none). Received: "
                             f"{self.keep_checkpoints}")

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json(self):
        return json.dumps(self.to_dict(), indent=2)

    @classmethod
    def from_dict(cls, values):
        names = [f.name for f in dataclasses.fields(cls)]
        unknown = sorted(set(values) - set(names))
        if unknown:
            raise ValueError(f"Unknown train config key(s) {unknown}. Valid keys: {', '.join(names)}")
        return cls(**values)

    def override(self, overrides):
        """A copy with `overrides` applied: keys of this config or of its model config.

        String values (from the command line) are converted to the field's type. A new
        `optimizer` resets `learning_rate` and `clipnorm` to that optimizer's defaults (0)
        unless `overrides` set them too: a recipe's rate belongs to its own optimizer
        (`--optimizer paper-sgd` on an Adam recipe would otherwise run SGD at Adam's 1e-3).
        """
        train_fields = {f.name: f for f in dataclasses.fields(self) if f.name != "model"}
        model_fields = {f.name: f for f in dataclasses.fields(self.model)}
        train_values, model_values = {}, {}
        for key, value in overrides.items():
            key = key.replace("-", "_")
            if key in train_fields:
                train_values[key] = _convert(key, getattr(self, key), value)
            elif key in model_fields:
                model_values[key] = _convert(key, getattr(self.model, key), value)
            else:
                valid = sorted(set(train_fields) | set(model_fields))
                raise ValueError(f"Unknown config key {key!r}. Valid keys: {', '.join(valid)}")
        if train_values.get("optimizer", self.optimizer) != self.optimizer:
            for key in ("learning_rate", "clipnorm"):
                train_values.setdefault(key, 0.0)
        values = {**self.to_dict(), **train_values}
        values["model"] = self.model.replace(**model_values)
        return TrainConfig.from_dict(values)


def jit_compile_arg(value):
    """The `model.compile(jit_compile=...)` argument for a config's `jit_compile` string."""
    return JIT_COMPILE[value]


def _convert(key, current, value):
    """`value` (a command-line string) as the type of the field `key`'s `current` value."""
    if not isinstance(value, str):
        return value
    if isinstance(current, bool):
        if value.lower() in ("1", "true", "yes", "on"):
            return True
        if value.lower() in ("0", "false", "no", "off"):
            return False
        raise ValueError(f"{key} expects a boolean (true/false). Received: {value!r}")
    for kind, name in ((int, "an integer"), (float, "a number")):
        if isinstance(current, kind):
            try:
                return kind(value)
            except ValueError:
                raise ValueError(f"{key} expects {name}. Received: {value!r}") from None
    return value
