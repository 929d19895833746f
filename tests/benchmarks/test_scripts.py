"""Every benchmark script runs end to end, as from a fresh clone, on the real Multi30k.

At toy scale: a model of a few thousand weights (`TINY`), a few steps, a few sentences. The
figures the scripts print are then real measurements of that tiny model; they are checked for
consistency (same model and batches on the backends run, outputs equal where they must be,
the records written), never for speed. The scripts start their own worker processes, one per
backend where they compare backends; a test runs one or two of those backends (each worker is
one script's code for every backend, and each process costs its import: 5-10 s), and each of
these tests runs in one pass only: most in the
tensorflow pass; `profile_step.py` profiles XLA and runs in the jax pass; quality.py, which
trains and searches under the pass's backend, in the torch pass, where the tiny models run
without compiling. JoeyNMT itself is not installed here
(`--no-joeynmt`); its log parsing is tested on lines of a real JoeyNMT 2.3.0 log.
"""

import json
import os
import subprocess
import sys

import pytest
from conftest import multi30k_dir
from script_helpers import (
    BENCHMARKS,
    SCORED,
    TINY,
    figures,
    result_line,
    run_main,
    run_script,
)


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_train_throughput_trains_the_same_model_on_the_same_batches_under_every_backend(
        tmp_path, capsys, monkeypatch):
    import train_throughput

    path = tmp_path / "train.json"
    # The driver in this process, a worker process per backend: TensorFlow, and PyTorch with
    # bfloat16 matmul operands (a `BACKEND:KEY=VALUE` entry). The JAX worker, the same code,
    # trains in the decode_throughput test below, which saves its run; a JAX worker here
    # took 34 s of this test's 79-97 s (2-core AMD EPYC).
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    out = run_main(train_throughput, capsys, "--backends", "tensorflow",
                   "torch:matmul_precision=bfloat16", "--no-joeynmt", "--steps", "2",
                   "--warmup", "1", "--json", path, "--set", *TINY)
    result = figures(out)
    assert json.loads(path.read_text()) == result
    assert result["matmul_peak_gflop_per_second"] > 0
    ours = result["ours"]
    assert list(ours) == ["tensorflow", "torch:matmul_precision=bfloat16"]
    for backend, row in ours.items():
        name, _, settings = backend.partition(":")
        assert row["backend"] == name and row["steps"] == 2
        assert row["matmul_precision"] == ("bfloat16" if settings else "float32")
        # Speed is the script's to print, not the test's to judge: the fraction of the peak is
        # only checked to be the printed GFLOP/s over the printed peak (3 significant digits).
        assert row["target_tokens_per_second"] > 0
        assert row["fraction_of_peak"] == pytest.approx(
            row["gflop_per_second"] / result["matmul_peak_gflop_per_second"], rel=0.02)
        assert 0 <= row["padding_fraction"] < 0.5
    # One config, one seed, one pipeline: the same weights and the same timed batches.
    for key in ("parameters", "target_tokens", "mflop_per_target_token", "shapes"):
        assert len({row[key] for row in ours.values()}) == 1, key
    assert ours["tensorflow"]["parameters"] < 20_000


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_recurrent_cost_compares_both_attentions_on_sb_and_on_fixed_lengths(tmp_path):
    out = run_script("recurrent_cost.py", "--backend", "tensorflow", "--steps", "2",
                     "--warmup", "1", "--lengths", "6", "--length-steps", "2", "--set", *TINY)
    rows = figures(out)["rows"]
    assert [row["setting"] for row in rows] == ["SB", "L=6"]
    for row in rows:
        bahdanau, recurrent = row["bahdanau"], row["recurrent-k5"]
        assert (bahdanau["attention"], recurrent["attention"]) == ("bahdanau", "recurrent")
        assert recurrent["window"] == 5
        assert recurrent["parameters"] > bahdanau["parameters"]  # the dynamic memory's LSTM
        assert row["time_ratio"] == pytest.approx(
            bahdanau["target_tokens_per_second"] / recurrent["target_tokens_per_second"],
            rel=1e-2)
        assert recurrent["peak_host_memory_mb"] > 0
    fixed = rows[1]["bahdanau"]
    assert fixed["length"] == 6 and fixed["target_tokens"] == 2 * 64 * 6
    assert fixed["padding_fraction"] == 0


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_decode_throughput_trains_decodes_exports_and_serves(tmp_path, capsys, monkeypatch):
    run_dir, saved = tmp_path / "run", tmp_path / "saved"
    # The decode worker under JAX with bfloat16 matmul operands (a `BACKEND:KEY=VALUE`
    # variant); plain TensorFlow decodes in the SavedModel's serving and in decode_bound.py
    # below. The other backends and variants run the same worker code (PyTorch's and
    # TensorFlow's XLA `Translator` are tested in their passes): each worker more took 15-28 s
    # of this test's 133-158 s (2-core AMD EPYC).
    out = run_script("decode_throughput.py", "--no-joeynmt", "--run-dir", str(run_dir),
                     "--saved-model", str(saved), "--train-steps", "2", "--train-warmup", "1",
                     "--sentences", "40", "--backends", "jax:matmul_precision=bfloat16",
                     "--max-output-length", "64", "--set", *TINY, "bucket_width=64")
    result = figures(out)
    # One bucket, so one batch shape for the JAX train worker to compile, not three: the
    # worker took 24 s instead of 33 s (2-core AMD EPYC; a TensorFlow worker gains nothing).
    assert result["ours_training"]["steps"] == 2
    assert (run_dir / "best.keras").exists() and (saved / "saved_model.pb").exists()
    assert list(result["ours"]) == ["jax:matmul_precision=bfloat16"]
    assert [row["matmul_precision"] for row in result["ours"].values()] == ["bfloat16"]
    for backend, row in result["ours"].items():
        assert row["backend"] == backend.partition(":")[0] and row["sentences"] == 40
        assert row["sentences_per_second"] > 0 and row["mean_output_tokens"] > 0
        assert 0 <= row["tokenised_bleu"] <= 100
    served = result["saved_model"]
    assert served["sentences"] == 40 and not served["keras_rnmt_imported"]
    assert served["length_sorted_outputs_equal"]
    assert 0 < served["latency_ms_p50"] <= served["latency_ms_p95"]

    # The decoding bound, on the model just trained, in this process (a process of its own
    # spent 10 of its 14 s importing TensorFlow). It wraps the translator's searches to count
    # their rows: monkeypatch puts the originals back afterwards.
    import decode_bound

    import keras_rnmt.translator as translator_module
    from keras_rnmt.search import programs

    monkeypatch.setattr(translator_module, "shrinking_beam_search",
                        translator_module.shrinking_beam_search)
    monkeypatch.setattr(programs, "graph_shrinking_beam_search",
                        programs.graph_shrinking_beam_search)
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    bound = result_line(run_main(decode_bound, capsys, run_dir, "--sentences", "40"))
    assert bound["backend"] == "tensorflow" and bound["sentences"] == 40
    # Every output needs its rows; the search computes at least those (and shed padding).
    assert 40 <= bound["rows_needed"] <= bound["rows_computed"]
    assert bound["rows_needed"] == 40 + 5 * (bound["output_ids"] - 40)
    # Timings are printed, not judged (the tiny projection can round to 0.00 ms); what
    # follows from them is checked: the bound is the needed rows at the step's time per row.
    assert bound["step_ms"] > 0 and bound["projection_ms"] >= 0
    row_seconds = bound["step_ms"] / 1000 / (64 * 5)
    assert bound["bound_sentences_per_second"] == pytest.approx(
        40 / (bound["rows_needed"] * row_seconds), rel=0.02)
    assert bound["of_bound"] == pytest.approx(
        bound["sentences_per_second"] / bound["bound_sentences_per_second"], abs=0.02)


def test_decode_throughput_passes_its_output_bound_to_the_export(monkeypatch):
    """`--max-output-length N` reaches `keras-rnmt export` (the test above exports with 64);
    left at 0, the export keeps its own default."""
    import decode_throughput

    commands = []

    def fake_run(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 0, stdout='RESULT {"ok": 1}\n', stderr="")

    monkeypatch.setattr(decode_throughput.subprocess, "run", fake_run)
    assert decode_throughput.export_and_serve("RUN", "OUT", "current", max_output_length=64) \
        == {"ok": 1}
    assert commands[0][1:] == ["export", "RUN", "OUT", "--beam-size", "5", "--stop-rule",
                               "current", "--max-output-length", "64"]
    decode_throughput.export_and_serve("RUN", "OUT", "current")
    assert "--max-output-length" not in commands[2]


def test_decode_throughput_gives_each_backend_variant_its_worker_options(monkeypatch):
    """`BACKEND:VARIANT` entries of `--backends` become the decode worker's options (the test
    above runs one variant end to end); an unknown variant names the valid ones."""
    import decode_throughput

    calls = []

    def fake_run(command, env=None, **kwargs):
        calls.append((command, env["KERAS_BACKEND"]))
        return subprocess.CompletedProcess(command, 0, stdout='RESULT {"ok": 1}\n', stderr="")

    monkeypatch.setattr(decode_throughput.subprocess, "run", fake_run)
    monkeypatch.setattr(decode_throughput, "worker_env", lambda **variables: variables)
    for backend in ("tensorflow", "tensorflow:xla", "jax:matmul_precision=bfloat16"):
        assert decode_throughput.decode(backend, "RUN", "current") == {"ok": 1}
    (plain, name), (xla, _), (bf16, bf16_name) = calls
    assert (name, bf16_name) == ("tensorflow", "jax")
    assert plain[2:] == ["RUN", "--stop-rule", "current", "--dtype-policy", "",
                         "--sentences", "0"]
    assert xla[-1] == "--jit-compile" and bf16[-2:] == ["--matmul-precision", "bfloat16"]
    with pytest.raises(ValueError, match="only 'tensorflow:xla' and"):
        decode_throughput.decode("tensorflow:fast", "RUN", "current")


def test_decode_throughput_refuses_a_partial_test_set_beside_joeynmt(capsys):
    import decode_throughput

    with pytest.raises(SystemExit) as stop:
        decode_throughput.main(["--sentences", "40"])
    assert "--no-joeynmt" in str(stop.value) + capsys.readouterr().err


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("torch")
def test_quality_trains_scores_and_records_a_run_then_decode_choices_picks_on_validation(
        tmp_path, capsys, monkeypatch):
    import decode_choices
    import quality

    work, records = tmp_path / "work", tmp_path / "runs"
    # In this process (the training itself runs in quality.py's own subprocess).
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    # The scripts score the first SCORED lines of val and test2016 (their sources and
    # references alike): with their six beam searches over the full sets this test took 149 s
    # alone on a 2-core CPU, with SCORED lines 94 s; every recorded run decodes the full sets.
    full_read = quality.read
    monkeypatch.setattr(quality, "read", lambda name: full_read(name)[:SCORED])
    monkeypatch.setattr(decode_choices, "read", quality.read)
    # The training run decodes all of test2016 greedily (`beam_size=1`): at the recipe's beam
    # of 5, the tiny model's outputs of maximal length made that search most of the run.
    run_main(quality, capsys, "--models", "bahdanau", "--seeds", "0", "--work", work,
             "--records", records, "--set", *TINY, "epochs=2", "steps_per_epoch=15",
             "learning_rate=0.01", "beam_size=1",
             "validation_sentences=16", "keep_checkpoints=2", "heatmap_sentences=0")
    record = records / "bahdanau-seed0"
    assert sorted(os.listdir(record)) == sorted(
        ["config.json", "data_report.json", "log.csv", "results.json", "scores.json",
         "test_hypotheses.txt"])
    scores = json.loads((record / "scores.json").read_text())
    assert scores["epochs_run"] == 2 and scores["init_from"] is None
    assert sorted(scores["scores"]) == ["beam12", "beam12+unk", "beam5", "beam5+unk"]
    beam5 = scores["scores"]["beam5"]
    assert "tok:none" in beam5["tokenised_signature"]
    assert "case:lc" in beam5["detokenised_signature"]
    # The training run's own test2016 translations (keras-rnmt train decodes all of it).
    assert len((record / "test_hypotheses.txt").read_text().splitlines()) == 1000
    summary = json.loads((work / "quality.json").read_text())
    assert [r["run_dir"] for r in summary["bahdanau"]] == [str(work / "bahdanau-seed0")]
    table = run_main(quality, capsys, "--table", record / "scores.json")
    assert "| bahdanau | 1 | 2 |" in table and f"{beam5['tokenised_bleu']:.2f}" in table

    choices = tmp_path / "choices.json"
    run_main(decode_choices, capsys, work / "bahdanau-seed0", "--average", "2", "--alphas",
             "1.0", "--json", choices)
    chosen = json.loads(choices.read_text())
    # Candidates: best.keras and the mean of epochs 1-2, each at α = 1, on validation.
    assert sorted(row["model"] for row in chosen["val"]) == ["average 1-2", "best"]
    assert chosen["chosen"]["model"] in ("average 1-2", "best")
    assert chosen["test_chosen"] == chosen["test_chosen_scores"]["beam5"]["tokenised_bleu"]
    hypotheses = (tmp_path / "test_hypotheses_chosen.txt").read_text().splitlines()
    assert len(hypotheses) == SCORED
    table = run_main(decode_choices, capsys, "--table", choices)
    assert "| bahdanau | 1 |" in table and f"{chosen['test_chosen']:.2f}" in table


@pytest.mark.backends("tensorflow")
def test_matmul_precision_measures_each_backend_in_both_precisions(capsys):
    import matmul_precision

    # The driver in this process, its workers in their own: JAX and PyTorch, in the order
    # asked (the TensorFlow worker is the same code with a `tf.function`; the three took
    # 35-41 s, the driver's own import of TensorFlow 11 s of it).
    out = run_main(matmul_precision, capsys, "--shapes", "8x16x32", "--backends", "torch",
                   "jax")
    lines = [line for line in out.splitlines() if "8x16 by 16x32" in line]
    assert [line.split()[0] for line in lines] == ["torch", "jax"]
    assert all("float32" in line and "bfloat16" in line for line in lines)
    with pytest.raises(SystemExit):
        matmul_precision.main(["--backends", "numpy"])
    assert "invalid choice: 'numpy'" in capsys.readouterr().err


@pytest.mark.backends("jax")
def test_bf16_products_measures_every_form_of_each_product():
    out = run_script("bf16_products.py", "--shapes", "8x16x32", backend="jax", data=False)
    figures = result_line(out)
    assert list(figures) == ["8x16x32"]
    assert len(figures["8x16x32"]) == 7 and all(v > 0 for v in figures["8x16x32"].values())


def test_matmul_precision_names_a_bad_shape(capsys):
    import matmul_precision

    with pytest.raises(SystemExit):
        matmul_precision.main(["--shapes", "8x16"])
    assert "a shape is MxKxN" in capsys.readouterr().err


def test_beam_step_cost_chunked_top_k_matches_the_full_one(capsys):
    import beam_step_cost

    # In this process, under this pass's backend (a process of its own took 9-10 s a pass).
    out = run_main(beam_step_cost, capsys, "--batch", "4", "--beams", "2", "--vocab", "58")
    assert "(same scores: True)" in out


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("jax")
def test_profile_step_attributes_thunk_time_to_model_parts():
    out = run_script("profile_step.py", "--length", "4", "--steps", "1", "--warmup", "1",
                     "--top", "3", "--set", *TINY, backend="jax")
    assert "traced thunks:" in out and "matmuls" in out
    assert "minor page faults a step" in out
    parts = {line.split()[0] for line in out.splitlines()
             if line.split()[:1] and line.split()[0] in ("decoder", "encoder", "optimizer")}
    assert parts == {"decoder", "encoder", "optimizer"}


@pytest.mark.multi30k
@pytest.mark.backends("torch")
def test_optimizer_update_times_every_variant_over_the_models_weights():
    out = run_script("optimizer_update.py", "--rounds", "2", "--updates", "1",
                     "--vocab", "200", "200", "--set", *TINY[:3], backend="torch")
    result = figures(out)
    variants = ["keras_adam_clip", "keras_rnmt_adam_clip", "keras_adam", "keras_rnmt_adam",
                "global_norm_only"]
    assert result["backend"] == "torch" and list(result["ms_per_update"]) == variants
    assert all(len(ms) == 2 and min(ms) > 0 for ms in result["ms_per_update"].values())
    assert result["best_ms"] == {name: min(ms) for name, ms in result["ms_per_update"].items()}
    assert 5_000 < result["weights"] < 20_000  # the tiny model's, not SB's 12.8M


def test_a_driver_killed_with_sigterm_takes_its_child_with_it(tmp_path):
    """`sb.exit_on_sigterm`: `kill PID` on a script waiting in `subprocess.run` ends its
    child too (a quality run's training would otherwise go on alone)."""
    import signal
    import time

    pid_file = tmp_path / "child.pid"
    child_script = tmp_path / "child.py"
    child_script.write_text("import os, sys, time\n"
                            "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
                            "time.sleep(60)\n")
    driver = tmp_path / "driver.py"
    driver.write_text("import subprocess, sys\n"
                      f"sys.path.insert(0, {BENCHMARKS!r})\n"
                      "from sb import exit_on_sigterm\n"
                      "exit_on_sigterm()\n"
                      f"subprocess.run([sys.executable, {str(child_script)!r}, {str(pid_file)!r}])\n")
    process = subprocess.Popen([sys.executable, str(driver)])
    deadline = time.time() + 30
    while not (pid_file.exists() and pid_file.read_text()) and time.time() < deadline:
        time.sleep(0.1)
    child = int(pid_file.read_text())
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=30) == 128 + signal.SIGTERM
    for _ in range(100):  # the child is killed and reaped by the driver before it exits
        if not os.path.exists(f"/proc/{child}"):
            break
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}")


@pytest.mark.heavy
@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_gpu_check_trains_and_searches_the_prepared_batches_under_jax_and_torch(
        tmp_path, capsys, monkeypatch):
    import gpu_check
    import numpy as np

    path = str(tmp_path / "batches.npz")
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    run_main(gpu_check, capsys, "prepare", path, "--batches", "4", "--set", *TINY)
    data = np.load(path)
    assert all(data[f"source_{i}"].shape[1] % 16 == 0 for i in range(4))
    assert data["test_source"].shape[0] == 1000
    # The recurrent model in float32 under JAX, whose programs take most of this test's time
    # to compile; both attentions under the loss-scaled policy under PyTorch, which runs them
    # eagerly. The policy and attention loops are backend-agnostic code in the script: the
    # PyTorch worker ran all four pairs in 59 s of this test's 92 s (2-core AMD EPYC).
    results = {}
    for backend, attentions, policies in (("jax", ["recurrent"], ["float32"]),
                                          ("torch", ["bahdanau", "recurrent"],
                                           ["mixed_float16"])):
        out = run_script("gpu_check.py", "run", path, "--allow-cpu", "--warmup", "1",
                         "--steps", "2", "--sentences", "8", "--beam-size", "2",
                         "--beam-passes", "2", "--attentions", *attentions,
                         "--policies", *policies, "--set", "dropout=0.3", backend=backend)
        lines = [json.loads(line[len("RESULT "):]) for line in out.splitlines()
                 if line.startswith("RESULT ")]
        assert [(r["attention"], r["dtype_policy"]) for r in lines] == [
            (attention, policy) for attention in attentions for policy in policies]
        assert all(r["backend"] == backend and r["loss_finite"] and r["steps"] == 2
                   and r["sentences"] == 8 and r["beam_mean_output_tokens"] > 0
                   and len(r["beam_passes_sentences_per_second"]) == 2
                   and r["changes"] == {"dropout": "0.3"}
                   and 0 <= r["tokenised_bleu"] <= 100
                   for r in lines)
        assert all(("loss_scale" in r) == (r["dtype_policy"] == "mixed_float16")
                   for r in lines)
        results[backend] = {r["attention"]: r["parameters"] for r in lines}
    # The same model (the prepared config) under both backends.
    assert results["jax"]["recurrent"] == results["torch"]["recurrent"]
    # Without a GPU and without --allow-cpu the check refuses to report CPU figures.
    with pytest.raises(SystemExit, match="no GPU visible"):
        gpu_check.main(["run", path])


def test_gpu_check_scores_outputs_up_to_their_end_token():
    import gpu_check
    import numpy as np

    vocabulary = ["", "<unk>", "<s>", "</s>", "ein", "hund", "läuft", "über", "die", "wiese"]
    info = dict(eos_id=3, target_vocabulary=vocabulary,
                test_references=["ein hund läuft über die wiese", "die wiese ein hund", "unused"])
    # Row 0 is its reference exactly; row 1 stops at </s>, its trailing ids ignored.
    ids = np.array([[4, 5, 6, 7, 8, 9, 3, 0], [8, 9, 4, 5, 3, 6, 6, 6]])
    assert gpu_check.tokenised_bleu(ids, info) == 100.0
    # An <unk> in place of a word costs matches.
    ids[1, 3] = 1
    assert 0.0 < gpu_check.tokenised_bleu(ids, info) < 100.0
    # A file written before references were stored: no score rather than a wrong one.
    assert gpu_check.tokenised_bleu(ids, {"eos_id": 3}) is None


@pytest.mark.multi30k
@pytest.mark.backends("tensorflow")
def test_batch_shapes_counts_the_shapes_of_the_training_datasets(capsys, monkeypatch):
    import batch_shapes

    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    # SB's width only: that nothing merges at width 8 is test_remainders.py's to check.
    rows = figures(run_main(batch_shapes, capsys, "--widths", "1"))["rows"]
    assert [(row["bucket_width"], row["merge_remainders"]) for row in rows] == [
        (1, False), (1, True)]
    for row in rows:  # every sentence once, whatever the batching
        assert (row["train"]["sentences"], row["val"]["sentences"]) == (29000, 1014)
    plain, merged = rows[0], rows[1]
    assert merged["train"]["shapes"] < plain["train"]["shapes"]
    assert merged["train"]["batches"] < plain["train"]["batches"]
    # The validation batches are merged whatever the switch (`training_datasets`).
    assert merged["val"] == plain["val"]
    for split in ("train", "val"):
        # One incomplete batch per 8-token bucket at most (Multi30k's longest pair: 45 + 1).
        assert merged[split]["incomplete_batches"] <= 6
    assert plain["train"]["incomplete_batches"] == plain["train"]["shapes"] - 22  # SB, width 1


def test_batch_shapes_says_which_settings_it_varies_itself(capsys):
    import batch_shapes

    with pytest.raises(SystemExit):
        batch_shapes.main(["--set", "merge_remainders=false"])
    assert "varies bucket_width (--widths) and merge_remainders" in capsys.readouterr().err
