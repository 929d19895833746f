"""Beam search on scripted Markov "models" with hand-derived hypotheses and scores.

The script (``SCRIPT_TABLE``, probabilities of the next token given the previous one):

    <s> -> a 0.5 | b 0.4 | c 0.1        a -> </s> 0.6 | a 0.1 | b 0.05 | c 0.25
    b   -> </s> 0.1 | c 0.9             c -> </s> 0.8 | c 0.2

Beam 2, alpha = 0 (2K = 4 candidates per step):
    step 0: a .5, b .4, c .1                      alive a, b
    step 1: bc .36, a</s> .3, ac .125, aa .05     finished a</s> .3; alive bc, ac
    step 2: bc</s> .288, ac</s> .1, bcc .072, ... finished bc</s>, ac</s>; alive bcc .072
    stop: the best finished (.3) beats any continuation of bcc (< .072).
Beam 3 adds "c" at step 0 and "aa" at step 1; its finished pool at step 2 holds
a</s> .3, bc</s> .288, ac</s> .1 (c</s> .08, aa</s> .03 and b</s> .04 rank below).

With alpha = 1, lp(2) = 7/6 and lp(3) = 8/6:
    a</s>:   log .3   / (7/6) = -1.0319767
    bc</s>:  log .288 / (8/6) = -0.9335961   <- the longer hypothesis now wins
    ac</s>:  log .1   / (8/6) = -1.7269388
and at step 2 the third-best (-1.727) is below what bcc (.072) might still reach,
log .072 / lp(5) = -1.579, so beam 3 runs one more step: bcc</s> scores -1.903 and the
pool is unchanged.
"""

import keras
import numpy as np
import pytest
from keras import ops

from keras_rnmt.precision import accelerator_present
from keras_rnmt.search import beam_search, greedy_search

from .fake_models import (
    BOS,
    CHAIN_ATTENTION,
    CHAIN_TABLE,
    EOS,
    SCRIPT_ATTENTION,
    SCRIPT_TABLE,
    A,
    B,
    C,
    RandomModel,
    table_state,
    table_step,
)

LOG_03, LOG_0288, LOG_01 = -1.2039728, -1.2447948, -2.3025851  # log .3, log .288, log .1


def to_numpy(x):
    return ops.convert_to_numpy(x)


def run_script(beam_size, n_best, **kwargs):
    kwargs.setdefault("max_length", 5)
    return beam_search(
        table_step(SCRIPT_TABLE, SCRIPT_ATTENTION),
        table_state(1),
        batch_size=1,
        beam_size=beam_size,
        bos_id=BOS,
        eos_id=EOS,
        n_best=n_best,
        **kwargs,
    )


def path_attention(table, tokens, length, steps):
    """The attention the step function emitted along a hypothesis: one row per fed token."""
    fed = [BOS] + list(tokens[: length - 1])
    expected = np.zeros((steps, table.shape[1]), "float32")
    expected[:length] = table[fed]
    return expected


SCRIPTED = {
    # (beam_size, alpha): (tokens, scores, log_probs, lengths), best first.
    (2, 0.0): (
        [[A, EOS, 0, 0, 0], [B, C, EOS, 0, 0]],
        [LOG_03, LOG_0288],
        [LOG_03, LOG_0288],
        [2, 3],
    ),
    (2, 1.0): (
        [[B, C, EOS, 0, 0], [A, EOS, 0, 0, 0]],
        [-0.9335961, -1.0319767],
        [LOG_0288, LOG_03],
        [3, 2],
    ),
    (3, 0.0): (
        [[A, EOS, 0, 0, 0], [B, C, EOS, 0, 0], [A, C, EOS, 0, 0]],
        [LOG_03, LOG_0288, LOG_01],
        [LOG_03, LOG_0288, LOG_01],
        [2, 3, 3],
    ),
    (3, 1.0): (
        [[B, C, EOS, 0, 0], [A, EOS, 0, 0, 0], [A, C, EOS, 0, 0]],
        [-0.9335961, -1.0319767, -1.7269388],
        [LOG_0288, LOG_03, LOG_01],
        [3, 2, 3],
    ),
}


@pytest.mark.parametrize(
    "beam_size, alpha, n_best",
    [(2, 0.0, 1), (2, 1.0, 1), (3, 0.0, 3), (3, 1.0, 3)],
)
def test_scripted_hypotheses_and_length_penalty_ranking(beam_size, alpha, n_best):
    result = run_script(beam_size, n_best, length_penalty=alpha)
    tokens, scores, log_probs, lengths = (np.array(v)[:n_best] for v in SCRIPTED[beam_size, alpha])
    np.testing.assert_array_equal(to_numpy(result.tokens)[0], tokens)
    np.testing.assert_allclose(to_numpy(result.scores)[0], scores, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(result.log_probs)[0], log_probs, rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(result.lengths)[0], lengths)
    # Each hypothesis carries the attention the step function emitted along its own path.
    attention = to_numpy(result.attention)[0]
    assert attention.shape == (n_best, 5, 3)
    for i in range(n_best):
        np.testing.assert_array_equal(
            attention[i], path_attention(SCRIPT_ATTENTION, tokens[i], lengths[i], 5)
        )


@pytest.mark.parametrize("beam_size, alpha", [(2, 0.0), (3, 1.0)])
def test_without_the_attention_history_the_hypotheses_are_the_same(beam_size, alpha):
    kept = run_script(beam_size, beam_size, length_penalty=alpha)
    dropped = run_script(beam_size, beam_size, length_penalty=alpha, keep_attention=False)
    assert dropped.attention is None
    for field in ("tokens", "scores", "log_probs", "lengths"):
        np.testing.assert_array_equal(to_numpy(getattr(dropped, field)),
                                      to_numpy(getattr(kept, field)))


def test_coverage_penalty_changes_the_ranking():
    """Beam 2, alpha = 0, beta = 0.5; source word 3 is padding in sentence 0 only.

    Coverage of a</s> (fed <s>, a): [1.1, 0.3, 0.6]; of bc</s> (fed <s>, b, c):
    [1.0, 1.3, 0.7]. Sentence 0 (word 3 masked):
        a</s>:  log .3   + 0.5 log .3 = -1.8059592
        bc</s>: log .288 + 0          = -1.2447948
    Sentence 1 (all real):
        a</s>:  1.5 log .3 + 0.5 log .6 = -2.0613720
        bc</s>: log .288   + 0.5 log .7 = -1.4231323
    Without coverage a</s> wins (see the alpha = 0 case); b c </s> covers the source better.
    """
    result = beam_search(
        table_step(SCRIPT_TABLE, SCRIPT_ATTENTION),
        table_state(2),
        batch_size=2,
        beam_size=2,
        bos_id=BOS,
        eos_id=EOS,
        max_length=5,
        coverage_penalty=0.5,
        source_mask=np.array([[True, True, False], [True, True, True]]),
        n_best=2,
    )
    hypotheses = [[B, C, EOS, 0, 0], [A, EOS, 0, 0, 0]]
    np.testing.assert_array_equal(to_numpy(result.tokens), [hypotheses, hypotheses])
    np.testing.assert_allclose(
        to_numpy(result.scores), [[-1.2447948, -1.8059592], [-1.4231323, -2.0613720]], rtol=1e-6
    )
    np.testing.assert_allclose(to_numpy(result.log_probs), [[LOG_0288, LOG_03]] * 2, rtol=1e-6)


def test_per_sentence_limits_and_frozen_finished_hypotheses():
    """Chain: <s> -> </s> .05 | a .6 | b .35; a -> </s> .1 | a .2 | b .7;
    b -> </s> .3 | a .6 | b .1; after </s> the chain offers "a" at no cost.

    Only the K best of the 2K candidates may finish (a </s> ranked below K would not have
    survived a beam of K). Sentence 0 (limit 2): step 0 keeps a .6, b .35 (</s> .05 ranks
    third, so it does not finish); step 1 forces </s>: b</s> .105, a</s> .06. Sentence 1
    (limit 3): step 1 keeps ab .42, ba .21 (aa .12 and b</s> .105 rank third and fourth);
    step 2 forces </s>: ab</s> .126, ba</s> .021. Sentence 0 is done after step 1 and its
    hypotheses do not change while sentence 1 runs step 2; nothing follows a </s>.
    """
    result = beam_search(
        table_step(CHAIN_TABLE, CHAIN_ATTENTION),
        table_state(2),
        batch_size=2,
        beam_size=2,
        bos_id=BOS,
        eos_id=EOS,
        max_length=np.array([2, 3], dtype="int32"),
        n_best=2,
    )
    tokens = [[[B, EOS, 0], [A, EOS, 0]], [[A, B, EOS], [B, A, EOS]]]
    lengths = [[2, 2], [3, 3]]
    np.testing.assert_array_equal(to_numpy(result.tokens), tokens)
    np.testing.assert_array_equal(to_numpy(result.lengths), lengths)
    # log .105, log .06 / log .126, log .021
    expected = [[-2.2537949, -2.8134107], [-2.0714734, -3.8632328]]
    np.testing.assert_allclose(to_numpy(result.log_probs), expected, rtol=1e-6)
    np.testing.assert_allclose(to_numpy(result.scores), expected, rtol=1e-6)
    attention = to_numpy(result.attention)
    for b in range(2):
        for i in range(2):
            np.testing.assert_array_equal(
                attention[b, i], path_attention(CHAIN_ATTENTION, tokens[b][i], lengths[b][i], 3)
            )


def test_an_unfillable_slot_is_empty():
    # With max_length=1 the only hypothesis is "</s>" (log .05); the second slot stays empty.
    result = beam_search(
        table_step(CHAIN_TABLE),
        table_state(1),
        batch_size=1,
        beam_size=2,
        bos_id=BOS,
        eos_id=EOS,
        max_length=1,
        n_best=2,
    )
    np.testing.assert_array_equal(to_numpy(result.tokens), [[[EOS], [0]]])
    np.testing.assert_allclose(to_numpy(result.scores), [[np.log(0.05), -np.inf]], rtol=1e-6)
    np.testing.assert_array_equal(to_numpy(result.lengths), [[1, 0]])
    assert result.attention is None


def test_beam_size_one_equals_greedy_exactly():
    model = RandomModel(seed=0, eos_logit=2.0)
    state = model.initial_state(4)
    limits = np.array([3, 6, 9, 12], dtype="int32")
    greedy = greedy_search(
        model.step, state, batch_size=4, bos_id=BOS, eos_id=EOS, max_length=limits
    )
    beam = beam_search(
        model.step, state, batch_size=4, beam_size=1, bos_id=BOS, eos_id=EOS, max_length=limits
    )
    lengths = to_numpy(greedy.lengths)
    # The fixture covers both endings: natural </s> before the limit and a forced one.
    assert (lengths < limits).any() and (lengths == limits).any()
    np.testing.assert_array_equal(to_numpy(beam.tokens)[:, 0], to_numpy(greedy.tokens))
    # Bit for bit on a CPU; on a GPU (H200, JAX) the two loops' fused kernels rounded a
    # score 1e-7 apart (RESULTS.md, "On a GPU").
    rtol = 1e-6 if accelerator_present() else 0
    np.testing.assert_allclose(to_numpy(beam.scores)[:, 0], to_numpy(greedy.scores), rtol=rtol)
    np.testing.assert_array_equal(to_numpy(beam.lengths)[:, 0], lengths)
    np.testing.assert_allclose(to_numpy(beam.attention)[:, 0], to_numpy(greedy.attention),
                               rtol=rtol)


def _log_table(rows):
    with np.errstate(divide="ignore"):
        return np.log(np.array(rows, dtype="float64")).astype("float32")


# <s> -> </s> .6 | a .4;  a -> a .9 | </s> .1. Only "a" continues, so a strong length
# penalty favours a long hypothesis that the "current" rule never reaches.
PATIENCE_TABLE = _log_table(
    [
        #  pad  <s>  </s>   a
        [0.0, 0.0, 1.0, 0.0],  # pad
        [0.0, 0.0, 0.6, 0.4],  # <s>
        [0.0, 0.0, 1.0, 0.0],  # </s>
        [0.0, 0.0, 0.1, 0.9],  # a
    ]
)


@pytest.mark.parametrize("stop_rule", ["current", "bound"])
def test_stop_rules(stop_rule):
    """Beam 2, alpha = 5, limit 5; lp(n) = ((5 + n) / 6) ** 5.

    Step 0 finishes "</s>": log .6 / lp(1) = -0.5108. The alive "a" (.4) scores
    log .4 / lp(1) = -0.916 at its current length, so "current" stops there. Under "bound"
    it might still reach log .4 / lp(5) = -0.0713, so the search goes on: "a a a </s>"
    (.0324) scores -3.4296 / lp(4) = -0.4516 at step 3, and at the limit the forced
    "a a a a </s>" (.02916) scores -3.5350 / lp(5) = -0.2749, the exact best.
    """
    result = beam_search(table_step(PATIENCE_TABLE), table_state(1), batch_size=1,
                         beam_size=2, bos_id=BOS, eos_id=EOS, max_length=5,
                         length_penalty=5.0, stop_rule=stop_rule)
    tokens, score = {"current": ([EOS, 0, 0, 0, 0], -0.5108256),
                     "bound": ([A, A, A, A, EOS], -0.2748783)}[stop_rule]
    np.testing.assert_array_equal(to_numpy(result.tokens)[0, 0], tokens)
    np.testing.assert_allclose(to_numpy(result.scores)[0, 0], score, rtol=1e-5)


def test_argument_errors_name_the_arguments():
    step, state = table_step(SCRIPT_TABLE), table_state(1)
    common = dict(batch_size=1, bos_id=BOS, eos_id=EOS, max_length=3)
    with pytest.raises(ValueError, match=r"n_best=3, beam_size=2"):
        beam_search(step, state, beam_size=2, n_best=3, **common)
    with pytest.raises(ValueError, match=r"length_penalty=-0.5"):
        beam_search(step, state, beam_size=2, length_penalty=-0.5, **common)
    with pytest.raises(ValueError, match=r"Unknown stop_rule 'exact'. Valid choices: 'bound'"):
        beam_search(step, state, beam_size=2, stop_rule="exact", **common)
    with pytest.raises(ValueError, match=r"coverage_penalty=0.2 needs attention"):
        beam_search(step, state, beam_size=2, coverage_penalty=0.2, **common)
    attending = table_step(SCRIPT_TABLE, SCRIPT_ATTENTION)
    with pytest.raises(ValueError, match=r"coverage_penalty=0.2 needs the attention history"):
        beam_search(attending, state, beam_size=2, coverage_penalty=0.2, keep_attention=False,
                    **common)
    with pytest.raises(ValueError, match=r"^beam_size must be a positive int; received "
                                         r"beam_size=0$"):
        beam_search(step, state, beam_size=0, **common)
    with pytest.raises(ValueError, match=r"^max_length must be >= 1; received max_length=0$"):
        beam_search(step, state, beam_size=2, **{**common, "max_length": 0})
    with pytest.raises(ValueError, match=r"^max_steps must be >= 1; received max_steps=0$"):
        greedy_search(step, state, max_steps=0, **common)

    calls = []

    def attends_once(tokens, state):  # attention on the first call only
        calls.append(1)
        log_probs, state, weights = attending(tokens, state)
        return log_probs, state, weights if len(calls) == 1 else None

    for search in (greedy_search, beam_search):
        calls.clear()
        options = {"beam_size": 2} if search is beam_search else {}
        with pytest.raises(ValueError, match=r"^step_fn must return attention on every step "
                                             r"or on none; it changed between steps"):
            search(attends_once, state, **options, **common)


@pytest.mark.backends("jax")
def test_a_traced_max_length_needs_max_steps():
    import jax

    step, state = table_step(SCRIPT_TABLE), table_state(1)

    @jax.jit
    def search(max_length):
        return greedy_search(step, state, batch_size=1, bos_id=BOS, eos_id=EOS,
                             max_length=max_length)

    with pytest.raises(ValueError, match=r"^max_length is a symbolic tensor \(inside jax.jit or "
                                         r"tf.function\); pass max_steps=<int>"):
        search(np.array([3], "int32"))


@pytest.mark.parametrize("search", ["beam", "greedy"])
def test_the_first_step_runs_once_per_sentence_and_every_step_once(search):
    """Step 0 sees B rows (every beam of a sentence would start alike), later steps B * K;
    an eager search calls the model once per step, with no extra call to probe shapes."""
    rows, steps = [], []
    table = ops.convert_to_tensor(SCRIPT_TABLE)

    def step(tokens, state):
        rows.append(int(ops.shape(tokens)[0]))
        if keras.backend.backend() != "jax":  # eager loops (JAX traces its body once)
            steps.append(int(ops.convert_to_numpy(state["steps"])[0]))
        return table_step(table)(tokens, state)

    batch, beam = 2, 3 if search == "beam" else 1
    if search == "beam":
        beam_search(step, table_state(batch), batch_size=batch, beam_size=beam, bos_id=BOS,
                    eos_id=EOS, max_length=4)
    else:
        greedy_search(step, table_state(batch), batch_size=batch, bos_id=BOS, eos_id=EOS,
                      max_length=4)
    assert rows[0] == batch and set(rows[1:]) <= {batch * beam}, rows
    assert steps == list(range(len(steps))), steps  # no step is run twice
    assert len(rows) > 1
