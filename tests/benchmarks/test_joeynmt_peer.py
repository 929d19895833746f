"""`benchmarks/joeynmt_peer.py` reads JoeyNMT's figures from its log (pure text processing).

The log below is made of lines of a real JoeyNMT 2.3.0 run of SB (2026-11-25), shortened.
"""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))

import joeynmt_peer  # noqa: E402
from conftest import multi30k_dir  # noqa: E402
from train_throughput import joeynmt_rate  # noqa: E402

PREFIX = "2026-11-25 01:43:13,428 - INFO - joeynmt."
LOG = "\n".join(PREFIX + line for line in [
    "model - Total params: 12542208",
    "training - Epoch   1, Step:       50, Batch Loss:     5.426104, Batch Acc: 0.103632, "
    "Tokens per Sec:      836, Lr: 0.000500",
    "training - Epoch   1, Step:      100, Batch Loss:     5.137426, Batch Acc: 0.163849, "
    "Tokens per Sec:      851, Lr: 0.000500",
    "training - Epoch   1, Step:      150, Batch Loss:     4.863563, Batch Acc: 0.203354, "
    "Tokens per Sec:      868, Lr: 0.000500",
    # The validation during training: greedy, before any "Decoding on ... set" line.
    "prediction - Generation took 15.8938[sec].",
    "prediction - Evaluation result (greedy): bleu:   5.24, loss:   3.79, ppl:  44.24, "
    "acc:   0.35, 0.0439[sec]",
    "prediction - Decoding on dev set... (device: cpu, n_gpu: 0, use_ddp: False, fp16: False)",
    "prediction - Generation took 20.5776[sec].",
    "prediction - Evaluation result (beam search): bleu:   5.64, 0.0429[sec]",
    "prediction - Decoding on test set... (device: cpu, n_gpu: 0, use_ddp: False, fp16: False)",
    "prediction - Generation took 20.5691[sec].",
    "prediction - Evaluation result (beam search): bleu:   5.66, 0.0394[sec]",
])


def test_parse_log_reads_windows_parameters_and_the_closing_decodes():
    result = joeynmt_peer.parse_log(LOG)
    assert result == {
        "train_windows": [(50, 836.0), (100, 851.0), (150, 868.0)],
        "learning_rates": [0.0005],
        "parameters": 12_542_208,
        "dev_decode_seconds": 20.5776, "dev_bleu": 5.64,
        "test_decode_seconds": 20.5691, "test_bleu": 5.66,
    }


def test_joeynmt_rate_averages_the_windows_after_the_first():
    rate, windows = joeynmt_rate(joeynmt_peer.parse_log(LOG))
    assert windows == 2 and rate == pytest.approx((851 + 868) / 2)


def test_an_unfinished_log_has_no_test_decode():
    """`train_one_epoch(reuse=True)` trains again unless the log has the test decode."""
    unfinished = LOG.split("prediction - Decoding on test set")[0]
    assert "test_decode_seconds" not in joeynmt_peer.parse_log(unfinished)


@pytest.mark.multi30k
@pytest.mark.parametrize("cuda, fp16", [(False, False), (True, False), (True, True)])
def test_prepare_fills_in_the_folders_and_the_device_switches(tmp_path, monkeypatch, cuda, fp16):
    """The peer config as given, with its folders, (on a GPU) device switches, a constant
    learning rate and SB's uniform initialization set."""
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    with open(joeynmt_peer.peer_config_path()) as f:
        given = f.read()
    with open(joeynmt_peer.prepare(str(tmp_path), cuda=cuda, fp16=fp16)) as f:
        written = f.read()
    data, model = os.path.join(tmp_path, "data"), os.path.join(tmp_path, "model")
    expected = (given.replace("DATA_DIR", data).replace("MODEL_DIR", model)
                .replace("use_cuda: False", f"use_cuda: {cuda}").replace("fp16: False", f"fp16: {fp16}")
                .replace("decrease_factor: 0.5", "decrease_factor: 1.0")
                .replace('initializer: "xavier_uniform"', 'initializer: "uniform"\n    init_weight: 0.1')
                .replace('embed_initializer: "normal"', 'embed_initializer: "uniform"')
                .replace('bias_initializer: "zeros"',
                         'bias_initializer: "uniform"\n    bias_init_weight: 0.1'))
    assert written == expected
    assert f"use_cuda: {cuda}" in written and f"fp16: {fp16}" in written
    with open(os.path.join(data, "train.de"), encoding="utf-8") as f:
        assert len(f.read().splitlines()) == 29_000


GIVEN = """training:
    optimizer: "adam"
    learning_rate: 0.001
    scheduling: "exponential"
    learning_rate_min: 0.00001

    decrease_factor: 0.5
    epochs: 1
"""


def test_the_epoch_scheduler_keeps_the_configured_learning_rate():
    """JoeyNMT steps its epoch scheduler before epoch 1: a factor of 0.5 would halve SB's
    Adam 1e-3 for the whole one-epoch run (`Lr: 0.000500` in LOG above)."""
    written = joeynmt_peer.constant_learning_rate(GIVEN, "peer.yaml")
    assert written == GIVEN.replace("decrease_factor: 0.5", "decrease_factor: 1.0")
    assert joeynmt_peer.configured_learning_rate(written) == 0.001


@pytest.mark.parametrize("text", [GIVEN.replace('"exponential"', '"plateau"'),
                                  GIVEN.replace("    decrease_factor: 0.5\n", ""),
                                  GIVEN + "    decrease_factor: 0.7\n"])
def test_an_unexpected_scheduler_is_refused_with_the_file_named(text):
    with pytest.raises(SystemExit, match="peer.yaml: expected scheduling"):
        joeynmt_peer.constant_learning_rate(text, "peer.yaml")


@pytest.mark.multi30k
def test_a_run_of_another_config_is_not_reused(tmp_path, monkeypatch):
    """`train_one_epoch(reuse=True)` parses an earlier run only if it ran today's config."""
    monkeypatch.setenv("KERAS_RNMT_DATA", os.path.dirname(multi30k_dir()))
    work = str(tmp_path)
    assert not joeynmt_peer.same_config(work, False, False)
    config = joeynmt_peer.prepare(work)
    assert joeynmt_peer.same_config(work, False, False)
    assert not joeynmt_peer.same_config(work, True, False)
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace("decrease_factor: 1.0", "decrease_factor: 0.5"))
    assert not joeynmt_peer.same_config(work, False, False)


def test_gpu_joeynmt_reports_the_peers_gpu_figures(monkeypatch, tmp_path):
    """`gpu_joeynmt.check` turns a JoeyNMT run's log figures into the side-by-side line."""
    import gpu_joeynmt

    calls = []

    def fake_run(work, reuse, python, cuda, fp16):
        calls.append((work, reuse, python, cuda, fp16))
        return {**joeynmt_peer.parse_log(LOG), "wall_seconds": 60.8}

    monkeypatch.setattr(joeynmt_peer, "train_one_epoch", fake_run)
    monkeypatch.setattr(joeynmt_peer, "mean_output_tokens", lambda work: 11.24)
    monkeypatch.setattr(gpu_joeynmt, "device_name", lambda: "a GPU")
    result = gpu_joeynmt.check(str(tmp_path), True, "python3")
    assert calls == [(str(tmp_path), False, "python3", True, True)]
    assert result["target_tokens_per_second"] == pytest.approx((851 + 868) / 2)
    assert result["windows"] == 2 and result["last_logged_update"] == 150
    assert result["beam_sentences_per_second"] == round(1000 / 20.5691, 1)
    assert (result["fp16"], result["device"], result["beam_mean_output_words"]) == (True, "a GPU", 11.2)
    assert result["test_bleu"] == 5.66 and result["parameters"] == 12_542_208


def test_gpu_joeynmt_refuses_a_machine_without_a_gpu(monkeypatch):
    """JoeyNMT would fall back to the CPU silently; the GPU benchmark says so and stops."""
    import gpu_joeynmt
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="no GPU visible to PyTorch"):
        gpu_joeynmt.main([])


def test_matched_initialization_sets_every_initializer_uniform_once():
    given = ("model:\n    initializer: \"xavier_uniform\"\n    init_weight: 0.01\n\n"
             "    embed_initializer: \"normal\"\n    embed_init_weight: 0.1\n"
             "    bias_initializer: \"zeros\"\n    encoder:\n        type: \"recurrent\"\n")
    assert joeynmt_peer.matched_initialization(given, "sb.yaml") == (
        "model:\n    initializer: \"uniform\"\n    init_weight: 0.1\n\n"
        "    embed_initializer: \"uniform\"\n    embed_init_weight: 0.1\n"
        "    bias_initializer: \"uniform\"\n    bias_init_weight: 0.1\n"
        "    encoder:\n        type: \"recurrent\"\n")
    with pytest.raises(SystemExit, match="sb.yaml: expected one 'bias_initializer:' line"):
        joeynmt_peer.matched_initialization(given.replace("    bias_initializer: \"zeros\"\n", ""),
                                            "sb.yaml")
