"""The `keras-rnmt` command: overrides, translate on files, plot, evaluate with perplexity."""

import os
import subprocess
import sys

import pytest
from run_helpers import SOURCES, TARGETS, save_run, tiny_parts

from keras_rnmt.cli import main, parse_overrides
from keras_rnmt.translator import Translator


def test_parse_overrides():
    assert parse_overrides(["--attention", "recurrent", "--window=5"]) == {
        "attention": "recurrent", "window": "5"}
    with pytest.raises(ValueError, match="Missing a value for --epochs"):
        parse_overrides(["--epochs"])
    with pytest.raises(ValueError, match="^Expected --key value, received 'recurrent'$"):
        parse_overrides(["recurrent"])


def test_bad_command_lines_are_one_line_errors(tmp_path, capsys):
    no_config = tmp_path / "recipe.py"
    no_config.write_text("EPOCHS = 3\n")
    for argv, message in (
        (["train", str(no_config)],
         f"keras-rnmt train: error: Recipe {no_config} must define `config()` returning a "
         "TrainConfig"),
        (["plot", str(tmp_path)], "keras-rnmt plot: error: give a sentence to translate, or "
                                  "--curves"),
    ):
        with pytest.raises(SystemExit) as stop:
            main(argv)
        assert stop.value.code == 1
        assert capsys.readouterr().err == message + "\n"
    toy = os.path.join(os.path.dirname(__file__), "..", "recipes", "toy.py")
    with pytest.raises(SystemExit):
        main(["train", toy, "--epochs", "ten"])
    assert capsys.readouterr().err == ("keras-rnmt train: error: epochs expects an integer. "
                                       "Received: 'ten'\n")
    with pytest.raises(SystemExit) as stop:
        main(["average", str(tmp_path), "--bogus", "1"])
    assert stop.value.code == 2 and "unrecognized arguments: --bogus 1" in capsys.readouterr().err


def test_train_rejects_unknown_key_with_valid_choices(tmp_path, capsys):
    recipe = os.path.join(os.path.dirname(__file__), "..", "recipes", "toy.py")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", recipe, "--atention", "dot", "--run-dir", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.startswith("keras-rnmt train: error: Unknown config key 'atention'. Valid keys: ")
    assert "attention" in err and "Traceback" not in err and err.count("\n") == 1
    with pytest.raises(ValueError, match="Unknown config key 'atention'. Valid keys: .*attention"):
        main(["train", recipe, "--atention", "dot", "--run-dir", str(tmp_path), "--traceback"])


def test_a_missing_recipe_or_run_is_one_line_naming_it(tmp_path, capsys):
    missing = str(tmp_path / "nowhere.py")
    with pytest.raises(SystemExit) as exit_info:
        main(["train", missing])
    assert exit_info.value.code == 1
    assert capsys.readouterr().err == f"keras-rnmt train: error: No recipe at {missing}\n"
    with pytest.raises(SystemExit):
        main(["translate", str(tmp_path / "no-run"), "-i", missing])
    err = capsys.readouterr().err
    assert err.startswith("keras-rnmt translate: error: ") and "no-run" in err
    recipe = tmp_path / "wrong.py"
    recipe.write_text("def config():\n    return 42\n")
    with pytest.raises(SystemExit):
        main(["train", str(recipe)])
    assert capsys.readouterr().err == (f"keras-rnmt train: error: Recipe {recipe}: config() must "
                                       "return a TrainConfig; it returned int\n")


def test_a_bug_keeps_its_traceback(monkeypatch):
    import keras_rnmt.cli as cli

    def broken(args, extra):
        raise RuntimeError("not bad input")

    monkeypatch.setattr(cli, "cmd_quickstart", broken)
    with pytest.raises(RuntimeError, match="not bad input"):
        cli.main(["quickstart"])


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    model, source_tokenizer, target_tokenizer = tiny_parts(
        SOURCES[:2], TARGETS[:2], attention="bahdanau")
    return save_run(str(tmp_path_factory.mktemp("run")), model, source_tokenizer,
                    target_tokenizer)


def test_translate_writes_one_line_per_input_line(run_dir, tmp_path):
    lines = ["a dog runs .", "", "the cat sleeps", " ".join(["dog"] * 300), ""]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "out.txt"
    alignments = tmp_path / "align.txt"
    # The untrained model never ends a sentence: each output runs to its limit, here
    # ceil(0.1 * (words + 1) + 5) tokens (36 for the 300 words; 460 at the defaults).
    # In this process; the stdin/stdout test below runs the command in its own.
    main(["translate", str(run_dir), "-i", str(source), "-o", str(output), "--beam-size", "2",
          "--alignments", str(alignments), "--max-length-a", "0.1", "--max-length-b", "5"])
    written = output.read_text(encoding="utf-8").split("\n")
    assert written[-1] == "" and len(written) - 1 == len(lines)
    assert written[1] == "" and written[4] == ""
    expected = Translator.from_run(run_dir, beam_size=2, max_length_a=0.1,
                                   max_length_b=5).translate(lines)
    assert written[:-1] == [result.text for result in expected]
    assert len(expected[3].ids) <= 36 and expected[3].attention.shape[1] == 301
    aligned = alignments.read_text().split("\n")
    assert len(aligned) - 1 == len(lines) and aligned[1] == "" and aligned[4] == ""
    # "i-j": target word j's most attended source word i (the source's </s> left out).
    first = expected[0]
    assert aligned[0] == " ".join(f"{int(first.attention[j, :-1].argmax())}-{j}"
                                  for j in range(len(first.tokens)))


def test_translate_names_bad_output_limits_in_one_line(run_dir, capsys):
    for bad in (["--max-length-a", "-1"], ["--max-length-a", "0", "--max-length-b", "0"]):
        with pytest.raises(SystemExit) as stop:
            main(["translate", str(run_dir), "-i", os.devnull, *bad])
        assert stop.value.code == 1
        err = capsys.readouterr().err
        assert err.startswith("keras-rnmt translate: error: max_length_a and max_length_b must "
                              "be >= 0 and allow one output token"), err


def test_translate_fails_on_an_unwritable_output_before_translating(run_dir, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("a dog runs .\nthe cat sleeps\n", encoding="utf-8")
    missing = tmp_path / "no_such_folder"
    for option in ("-o", "--alignments"):
        with pytest.raises(SystemExit) as stop:
            main(["translate", str(run_dir), "-i", str(source), option, str(missing / "x.txt")])
        assert stop.value.code == 1
        err = capsys.readouterr().err
        assert "No such file or directory" in err and str(missing) in err, err
        assert "translated" not in err  # not one line was searched
    # The output may be the input itself: it is read before the outputs are opened.
    main(["translate", str(run_dir), "-i", str(source), "-o", str(source)])
    assert len(source.read_text(encoding="utf-8").split("\n")) == 3


def test_translate_writes_n_best_lists_only_where_asked(run_dir, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text("a dog runs .\n\nthe cat sleeps\n", encoding="utf-8")
    output, lists = tmp_path / "out.txt", tmp_path / "nbest.txt"
    main(["translate", str(run_dir), "-i", str(source), "-o", str(output), "--beam-size", "3",
          "--n-best", "2", "--n-best-output", str(lists)])
    rows = [line.split("\t") for line in lists.read_text(encoding="utf-8").splitlines()]
    assert [row[0] for row in rows] == ["0", "0", "1", "2", "2"]  # the empty line: one row
    best = output.read_text(encoding="utf-8").splitlines()
    assert [rows[0][2], rows[3][2]] == [best[0], best[2]]  # best first
    # With one hypothesis a line, the file is still written (once it was left out silently).
    main(["translate", str(run_dir), "-i", str(source), "-o", str(output), "--beam-size", "3",
          "--n-best-output", str(lists)])
    assert [line.split("\t")[2] for line in lists.read_text(encoding="utf-8").splitlines()] == \
        output.read_text(encoding="utf-8").splitlines()
    # Lists asked for with nowhere to go were computed and dropped: now an error, at once.
    capsys.readouterr()
    with pytest.raises(SystemExit) as stop:
        main(["translate", "no-such-run", "-i", str(source), "--n-best", "2"])
    assert stop.value.code == 1
    assert capsys.readouterr().err == ("keras-rnmt translate: error: --n-best 2 needs "
                                       "--n-best-output FILE for the lists: the output holds "
                                       "one translation per input line\n")


def test_translate_names_a_bad_beam_or_batch_size_in_one_line(run_dir, capsys):
    for option, value in (("--beam-size", "0"), ("--beam-size", "-2"), ("--batch-size", "0")):
        with pytest.raises(SystemExit) as stop:
            main(["translate", str(run_dir), "-i", os.devnull, option, value])
        assert stop.value.code == 1
        name = option[2:].replace("-", "_")
        assert capsys.readouterr().err == (f"keras-rnmt translate: error: {name} must be a "
                                           f"positive int; received {name}={int(value)}\n")


# The CLI's own process reading stdin: its I/O is the same under every backend, and the
# process under TensorFlow or JAX took 20-26 s a pass (its import and search compile); the
# translations it must match are the pass's in-process `Translator`'s, tested in every pass.
@pytest.mark.backends("torch")
def test_translate_stdin_to_stdout_gives_only_the_translations(run_dir):
    # Progress goes to stderr; "\r\n" ends a line as "\n" does (as for -i FILE).
    lines = ["a dog runs .", "", "the cat sleeps"]
    env = {**os.environ, "KERAS_BACKEND": os.environ.get("KERAS_BACKEND", "tensorflow")}
    result = subprocess.run([sys.executable, "-m", "keras_rnmt.cli", "translate", str(run_dir),
                             "--beam-size", "2"], input="\r\n".join(lines).encode() + b"\r\n",
                            check=True, env=env, capture_output=True)
    expected = Translator.from_run(run_dir, beam_size=2).translate(lines)
    assert result.stdout.decode("utf-8") == "".join(r.text + "\n" for r in expected)
    assert b"translated 3/3 lines" in result.stderr


def test_translate_reports_invalid_utf8_with_file_and_line(run_dir, tmp_path, capsys):
    source = tmp_path / "bad.txt"
    source.write_bytes(b"fine\n\xff\xfe broken\n")
    with pytest.raises(SystemExit) as stop:
        main(["translate", str(run_dir), "-i", str(source)])
    assert stop.value.code != 0
    assert f"{source}:2" in capsys.readouterr().err


class _Spy:
    """Wraps a plotting function, keeping the arguments of every call."""

    def __init__(self, function):
        self.function, self.calls = function, []

    def __call__(self, *args, **kwargs):
        self.calls.append(args)
        return self.function(*args, **kwargs)


def test_plot_writes_heatmap_and_memory_panel_of_the_translation(trained_run, tmp_path,
                                                                 monkeypatch, capsys):
    import numpy as np
    from keras import ops

    from keras_rnmt import plotting
    from keras_rnmt.attention import memory_norms
    from keras_rnmt.translator import Translator

    attention_spy = _Spy(plotting.plot_attention)
    memory_spy = _Spy(plotting.plot_memory_norms)
    monkeypatch.setattr(plotting, "plot_attention", attention_spy)
    monkeypatch.setattr(plotting, "plot_memory_norms", memory_spy)
    out = tmp_path / "dog.png"
    main(["plot", str(trained_run), "a dog runs .", "-o", str(out), "--beam-size", "2"])
    memory_out = tmp_path / "dog_memory.png"
    assert capsys.readouterr().out.split() == [str(out), str(memory_out)]
    for path in (out, memory_out):
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    translator = Translator.from_run(str(trained_run), beam_size=2)
    expected = translator.translate(["a dog runs ."])[0]
    weights, source_tokens, target_tokens = attention_spy.calls[0]
    assert source_tokens == ["a", "dog", "runs", ".", "</s>"]
    assert target_tokens == (expected.tokens + ["</s>"])[:len(expected.ids)]
    np.testing.assert_allclose(weights, expected.attention, atol=1e-6)
    norms, memory_sources, memory_targets = memory_spy.calls[0]
    assert (memory_sources, memory_targets) == (source_tokens, target_tokens)
    assert norms.shape == (len(expected.ids), 5) and (norms >= 0).all()
    states = translator.attention_states("a dog runs .", expected)
    np.testing.assert_allclose(norms, np.linalg.norm(states[1], axis=-1), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(norms, ops.convert_to_numpy(memory_norms(states)), rtol=1e-6)


def test_plot_without_recurrent_attention_writes_only_the_heatmap(run_dir, capsys):
    main(["plot", str(run_dir), "a dog runs .", "--beam-size", "1"])
    written = os.path.join(str(run_dir), "attention.png")
    assert capsys.readouterr().out.split() == [written]
    assert os.path.exists(written)
    assert not os.path.exists(os.path.join(str(run_dir), "attention_memory.png"))
    with pytest.raises(SystemExit):
        main(["plot", str(run_dir)])
    assert "keras-rnmt plot: error: give a sentence to translate, or --curves\n" in capsys.readouterr().err


def test_plot_curves_reads_the_run_log(trained_run, tmp_path, capsys):
    out = tmp_path / "curves.png"
    main(["plot", str(trained_run), "--curves", "-o", str(out)])
    assert capsys.readouterr().out.split() == [str(out)]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_evaluate_reports_perplexity_next_to_bleu(trained_run, tmp_path, capsys):
    from keras_rnmt.evaluation import corpus_perplexity, corpus_scores
    from keras_rnmt.translator import Translator

    (tmp_path / "src").write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    (tmp_path / "ref").write_text("\n".join(TARGETS) + "\n", encoding="utf-8")
    main(["evaluate", str(trained_run), "--source", str(tmp_path / "src"), "--reference",
          str(tmp_path / "ref"), "--tokenized", "--beam-size", "1", "-o", str(tmp_path / "hyp")])
    lines = capsys.readouterr().out.strip().split("\n")
    assert lines[0].startswith("BLEU ") and lines[1].startswith("chrF ")
    assert lines[2].startswith("perplexity ")
    # -o: the translations scored, one per source line.
    translator = Translator.from_run(str(trained_run), beam_size=1)
    hypotheses = (tmp_path / "hyp").read_text(encoding="utf-8").split("\n")
    assert hypotheses == translator(SOURCES) + [""]
    assert lines[0] == str(corpus_scores(hypotheses[:-1], TARGETS, tokenized=True)).split("\n")[0]
    expected = corpus_perplexity(translator.model, SOURCES, TARGETS,
                                 translator.source_tokenizer, translator.target_tokenizer)
    assert float(lines[2].split()[1]) == pytest.approx(expected, abs=1e-3)
    (tmp_path / "empty.src").write_text("", encoding="utf-8")
    (tmp_path / "empty.ref").write_text("", encoding="utf-8")
    with pytest.raises(SystemExit):
        main(["evaluate", str(trained_run), "--source", str(tmp_path / "empty.src"),
              "--reference", str(tmp_path / "empty.ref")])
    assert capsys.readouterr().err == (
        f"keras-rnmt evaluate: error: {tmp_path / 'empty.src'} and {tmp_path / 'empty.ref'} "
        "hold no lines: nothing to evaluate\n")


def test_translate_in_bfloat16_and_a_bad_policy(run_dir, tmp_path, capsys):
    lines = ["a dog runs .", "", "the cat sleeps"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "out.txt"
    main(["translate", str(run_dir), "-i", str(source), "-o", str(output), "--beam-size", "2",
          "--dtype-policy", "mixed_bfloat16"])
    written = output.read_text(encoding="utf-8").split("\n")
    assert len(written) - 1 == len(lines) and written[1] == ""
    with pytest.raises(SystemExit):
        main(["translate", str(run_dir), "-i", str(source), "--dtype-policy", "bfloat17"])
    assert "invalid choice: 'bfloat17'" in capsys.readouterr().err


def test_the_cli_lists_the_training_dtype_policies():
    from keras_rnmt.cli import DTYPE_POLICIES, MATMUL_PRECISIONS
    from keras_rnmt.matmul_precision import MATMUL_PRECISIONS as PRECISIONS
    from keras_rnmt.training.config import POLICIES

    assert DTYPE_POLICIES == POLICIES and MATMUL_PRECISIONS == PRECISIONS


def test_translate_with_bfloat16_matmuls_under_jax_and_torch_or_a_one_line_error(
        run_dir, tmp_path, capsys):
    import keras

    from keras_rnmt.matmul_precision import matmul_precision_scope

    lines = ["a dog runs .", "", "the cat sleeps"]
    source = tmp_path / "in.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    output = tmp_path / "out.txt"
    command = ["translate", str(run_dir), "-i", str(source), "-o", str(output),
               "--beam-size", "2", "--matmul-precision", "bfloat16"]
    if keras.backend.backend() not in ("jax", "torch"):
        with pytest.raises(SystemExit):
            main(command)
        assert "implemented under JAX and PyTorch only" in capsys.readouterr().err
        assert not output.exists()
        return
    main(command)
    with matmul_precision_scope("bfloat16"):
        expected = Translator.from_run(run_dir, beam_size=2).translate(lines)
    assert output.read_text(encoding="utf-8").split("\n")[:-1] == [r.text for r in expected]


def test_export_passes_the_model_file_search_options_and_dtype_policy(monkeypatch, tmp_path):
    import keras_rnmt.export

    calls = []
    monkeypatch.setattr(keras_rnmt.export, "export_run",
                        lambda *args, **kwargs: calls.append((args, kwargs)))
    main(["export", "RUN", str(tmp_path / "out"), "--model-file", "averaged.keras",
          "--beam-size", "3", "--length-penalty", "0.6", "--dtype-policy", "mixed_bfloat16"])
    main(["export", "RUN", str(tmp_path / "out"), "--max-length-a", "1.2", "--max-length-b",
          "4", "--max-output-length", "64", "--stop-rule", "bound"])
    assert calls == [(("RUN", str(tmp_path / "out")),
                      {"model_file": "averaged.keras", "dtype_policy": "mixed_bfloat16",
                       "beam_size": 3, "length_penalty": 0.6, "stop_rule": "current"}),
                     (("RUN", str(tmp_path / "out")),
                      {"model_file": "best.keras", "dtype_policy": None, "stop_rule": "bound",
                       "max_length_a": 1.2, "max_length_b": 4.0, "max_output_length": 64})]


def test_stdin_with_invalid_utf8_names_its_line(monkeypatch):
    import io

    from keras_rnmt.cli import _read_input

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"fine\r\nok\n\xff bad\n")))
    with pytest.raises(ValueError, match=r"^<stdin>:3: invalid UTF-8$"):
        _read_input("-")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"fine\r\n\nlast")))
    assert _read_input(None) == ["fine", "", "last"]
    # A byte-order mark before the first line is dropped, as `read_lines` drops a file's.
    bom = io.BytesIO(b"\xef\xbb\xbftwo dogs\n\xef\xbb\xbfkept\n")
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(bom))
    assert _read_input("-") == ["two dogs", "\ufeffkept"]
