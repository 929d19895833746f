"""`benchmarks/position_similarity.py`: the pairwise cosine on hand-computed vectors, and the
script end to end on tiny runs with either encoder."""

import numpy as np
import pytest
from run_helpers import SOURCES, save_run, tiny_parts
from script_helpers import run_main


def test_mean_pairwise_cosine_of_hand_computed_vectors():
    import position_similarity

    assert position_similarity.mean_pairwise_cosine([[1, 0], [2, 0], [3, 0]]) == pytest.approx(1)
    assert position_similarity.mean_pairwise_cosine([[1, 0], [0, 5]]) == pytest.approx(0)
    # Pairs: (a, b) 1/sqrt(2), (a, c) 0, (b, c) 1/sqrt(2); the diagonal is left out.
    cosines = position_similarity.mean_pairwise_cosine([[1, 0], [1, 1], [0, 1]])
    assert cosines == pytest.approx(np.sqrt(2) / 3)
    assert position_similarity.mean_pairwise_cosine([[1, 0], [-1, 0]]) == pytest.approx(-1)
    with pytest.raises(ValueError, match="at least 2 vectors"):
        position_similarity.mean_pairwise_cosine([[1, 0]])


def test_self_attention_block_outputs_end_in_the_encoder_memory():
    from keras import ops

    for normalize_first in (False, True):
        model, source_tokenizer, _ = tiny_parts(encoder_type="self-attention",
                                                transformer_layers=2, num_heads=2,
                                                intermediate_dim=16,
                                                normalize_first=normalize_first)
        ids = np.array(source_tokenizer.tokenize(SOURCES[:2]).to_list()[0][:3] * 2,
                       "int32").reshape(2, 3)
        outputs, mask = model.encoder.block_outputs(ids)
        memory = model.encoder(ids)[0]
        assert len(outputs) == 3 and tuple(mask.shape) == (2, 3)
        if normalize_first:  # the stack's final norm comes after the last block
            memory_again = model.encoder.final_norm(outputs[-1])
        else:
            memory_again = outputs[-1]
        np.testing.assert_allclose(ops.convert_to_numpy(memory),
                                   ops.convert_to_numpy(memory_again), atol=1e-6)


# The script's code is backend-agnostic, and the block outputs it reads are tested in every
# pass above: one pass, the torch one, where the tiny models run without compiling.
@pytest.mark.backends("torch")
def test_the_script_prints_a_line_per_run(tmp_path, capsys):
    import position_similarity

    runs = []
    for encoder_type in ("rnn", "self-attention"):
        model, source_tokenizer, target_tokenizer = tiny_parts(
            attention="bahdanau", encoder_type=encoder_type, transformer_layers=2,
            num_heads=2, intermediate_dim=16)
        runs.append(save_run(str(tmp_path / encoder_type), model, source_tokenizer,
                             target_tokenizer))
    source = tmp_path / "source.txt"
    source.write_text("\n".join(SOURCES) + "\n", encoding="utf-8")
    out = run_main(position_similarity, capsys, *runs, "--source", source)
    lines = [line for line in out.splitlines() if ": " in line and "mean cosine" not in line]
    assert [line.split(":")[0] for line in lines] == ["rnn", "self-attention"]
    assert "block" not in lines[0] and lines[0].startswith("rnn: memory ")
    names = [cell.rsplit(" ", 1)[0] for cell in lines[1].split(": ", 1)[1].split(", ")]
    assert names == ["input", "block 1", "block 2", "memory"]
    for line in lines:
        for cell in line.split(": ", 1)[1].split(", "):
            assert -1.0 <= float(cell.rsplit(" ", 1)[1]) <= 1.0
    assert f"each of {len(SOURCES)} sentences of {source}" in out
