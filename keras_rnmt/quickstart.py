"""`make quickstart`: train recurrent attention on the toy pair, evaluate, plot, translate."""

import os

from keras_rnmt.models import ModelConfig
from keras_rnmt.training.config import TrainConfig


def toy_config():
    """The quickstart model: recurrent attention (k=1) small enough for 2 CPU cores."""
    return TrainConfig(
        dataset="toy",
        toy_examples=6000,
        min_frequency=1,
        model=ModelConfig(
            embedding_dim=64, encoder_units=64, decoder_units=128, attention="recurrent",
            window=1, memory_units=32, attention_units=64, dropout=0.1,
        ),
        batch_size=64,
        epochs=4,
        learning_rate=3e-3,
        patience=2,
        beam_size=5,
    )


def main(run_dir="runs/quickstart"):
    from keras_rnmt.datasets import toy_splits
    from keras_rnmt.export import export_run
    from keras_rnmt.plotting import plot_attention
    from keras_rnmt.training.train import train_and_evaluate
    from keras_rnmt.translator import Translator

    config = toy_config()
    results = train_and_evaluate(config, run_dir)
    print(f"\nquickstart test BLEU: {results['test_bleu']:.2f} "
          f"({results['training_seconds']:.0f} s of training)")

    translator = Translator.from_run(run_dir)
    sources, references = toy_splits(seed=config.seed, train_size=config.toy_examples)["test"]
    examples = translator.translate(sources[:3])
    for source, reference, result in zip(sources, references, examples):
        print(f"  source:    {source}\n  output:    {result.text}\n  reference: {reference}")
    heatmap = os.path.join(run_dir, "attention.png")
    first = examples[0]
    plot_attention(first.attention, first.source_tokens, first.tokens + ["</s>"], path=heatmap,
                   title="recurrent attention (k=1), toy test sentence 1")
    print(f"attention heatmap: {heatmap}")

    exported = os.path.join("saved_models", "toy_recurrent")
    export_run(run_dir, exported)
    print(f"SavedModel: {exported}; translating through it with plain tf.saved_model.load:")
    serve = _load_saved_model(exported)
    outputs = serve(sources[:3])
    for source, output in zip(sources[:3], outputs):
        print(f"  {source}  ->  {output}")
    return results


def _load_saved_model(path):
    """Translate with the exported model in a subprocess that never imports keras_rnmt."""
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, tensorflow as tf\n"
        "serve = tf.saved_model.load(sys.argv[1]).signatures['serving_default']\n"
        "out = serve(inputs=tf.constant(json.loads(sys.stdin.read())))\n"
        "print(json.dumps([t.decode('utf-8') for t in out['translations'].numpy()]))\n"
    )

    def serve(sentences):
        result = subprocess.run([sys.executable, "-c", code, path], input=json.dumps(sentences),
                                capture_output=True, text=True, check=True)
        return json.loads(result.stdout.strip().splitlines()[-1])

    return serve
