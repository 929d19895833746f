"""`benchmarks/attention_stats.py`: attention statistics on hand-computed matrices, and the
script end to end on a tiny run."""

import numpy as np
import pytest
from run_helpers import SOURCES, TARGETS, save_run, tiny_parts
from script_helpers import run_main


def test_statistics_of_a_hand_computed_matrix():
    import attention_stats

    weights = [[0.8, 0.2, 0.0],
               [0.3, 0.6, 0.1],
               [0.5, 0.0, 0.5]]
    stats = attention_stats.sentence_statistics(weights)
    # Before row 3 the first word has received 0.8 + 0.3 = 1.1: row 3's 0.5 goes to it again.
    assert stats["re-attention"] == pytest.approx(0.5 / 3)
    # Fertilities 1.6, 0.8, 0.6: none above 2 or under 0.3.
    assert stats["over-attended"] == 0.0 and stats["neglected"] == 0.0
    # Expected positions 0.2, 0.8, 1.0: no step back.
    assert stats["backward jumps"] == 0.0
    entropies = [-(0.8 * np.log(0.8) + 0.2 * np.log(0.2)),
                 -(0.3 * np.log(0.3) + 0.6 * np.log(0.6) + 0.1 * np.log(0.1)), np.log(2)]
    assert stats["entropy"] == pytest.approx(np.mean(entropies))


def test_statistics_of_a_repeating_jumping_matrix():
    import attention_stats

    weights = [[0, 0, 1], [1, 0, 0], [1, 0, 0], [1, 0, 0]]
    stats = attention_stats.sentence_statistics(weights)
    assert stats["re-attention"] == pytest.approx(2 / 4)  # rows 3 and 4 on a covered word
    assert stats["over-attended"] == pytest.approx(1 / 3)  # fertility 3
    assert stats["neglected"] == pytest.approx(1 / 3)  # fertility 0
    assert stats["backward jumps"] == pytest.approx(1 / 3)  # position 2 -> 0
    assert stats["entropy"] == 0.0
    with pytest.raises(ValueError, match="non-empty"):
        attention_stats.sentence_statistics(np.zeros((0, 3)))


def test_forced_weights_do_not_depend_on_the_batch(tmp_path):
    """Weights forced on the references in one padded batch are each sentence's own."""
    import attention_stats
    from keras import ops

    from keras_rnmt.translator import Translator

    model, source_tokenizer, target_tokenizer = tiny_parts(attention="recurrent", window=1)
    translator = Translator(model, source_tokenizer, target_tokenizer)
    batched = attention_stats.forced_on_references(translator, SOURCES, TARGETS)
    for source, target, weights in zip(SOURCES, TARGETS, batched):
        source_ids = source_tokenizer.tokenize([source]).to_list()[0] + [source_tokenizer.eos_id]
        target_ids = target_tokenizer.tokenize([target]).to_list()[0]
        alone = ops.convert_to_numpy(model.attention_weights(
            np.array([source_ids], "int32"),
            np.array([[target_tokenizer.bos_id] + target_ids], "int32")))[0]
        assert weights.shape == (len(target_ids) + 1, len(source_ids))
        np.testing.assert_allclose(weights, alone, atol=1e-5)
        np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)


# The script's reading, table and forcing code is backend-agnostic, and so are the weights
# it reads (the forced-weights test above runs in every pass): one pass, the torch one, where
# the tiny models run without compiling (under TensorFlow and JAX 10-11 s a case).
@pytest.mark.backends("torch")
@pytest.mark.parametrize("forced", ["reference", "output"])
def test_the_script_prints_a_row_per_run(tmp_path, capsys, forced):
    import attention_stats

    runs = []
    for attention in ("bahdanau", "recurrent"):
        model, source_tokenizer, target_tokenizer = tiny_parts(attention=attention)
        runs.append(save_run(str(tmp_path / attention), model, source_tokenizer,
                             target_tokenizer))
    source, reference = tmp_path / "source.txt", tmp_path / "reference.txt"
    source.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    reference.write_text("\n".join(TARGETS) + "\n", encoding="utf-8")
    out = run_main(attention_stats, capsys, *runs, "--forced", forced, "--source", source,
                   "--reference", reference)
    rows = [line.split("|")[1:-1] for line in out.splitlines() if line.startswith("| ")]
    assert [row[0].strip() for row in rows] == ["run", "bahdanau", "recurrent"]
    for row in rows[1:]:
        shares = [float(cell.strip().rstrip("%")) for cell in row[1:5]]
        assert all(0.0 <= share <= 100.0 for share in shares)
        assert float(row[5]) >= 0.0
    assert f"4 sentences of {source}, forced on the {forced}" in out


def test_the_script_names_mismatched_files(tmp_path):
    import attention_stats

    source, reference = tmp_path / "source.txt", tmp_path / "reference.txt"
    source.write_text("a\nb\n", encoding="utf-8")
    reference.write_text("a\n", encoding="utf-8")
    with pytest.raises(SystemExit, match="has 2 lines"):
        attention_stats.main([str(tmp_path), "--source", str(source), "--reference",
                              str(reference)])
